"""Ranking tools against a need in plain words: BM25F over names, descriptions and arguments.

``search_tools`` must find "assign_ticket" for "give this ticket to Maria" among
hundreds of tools. Each tool is three fields of terms (see ``tool_words.py``:
stems, everyday phrases): its name, which says most precisely what it is for,
its description, and its arguments' names and descriptions, which say least.
BM25F (k1=1.2, b=0.75 per field) weighs them accordingly. A need's word may
also match through related words and shared beginnings, at half weight, and a
tool is scored by the best match of each word, not the sum of all its
synonyms; a tool matching more of the need's words then wins over one that
matches a single word strongly (coordination). The index is built from
the frozen registry, and again when tools join later (an MCP server changed its list).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wakeful.tools.tool_words import RELATED, Term, terms

_K1 = 1.2
_B = 0.75
_RELATED_WEIGHT = 0.5
_MIN_PREFIX = 4  # shorter words share too many beginnings by chance
# How much a term found in each field counts (BM25F's field boosts).
_NAME_WEIGHT = 3.0
_DESCRIPTION_WEIGHT = 1.0
_ARGUMENTS_WEIGHT = 0.5
# A description starts with what the tool does ("Bill a customer: …", "Pay a vendor
# bill …"): its first word is the action, a fourth field.
_ACTION_WEIGHT = 2.0


@dataclass(frozen=True)
class ToolDocument:
    """What a tool is searched by."""

    name: str
    description: str
    fields: Sequence[str] = ()  # its argument names (and their descriptions)


class ToolIndex:
    """BM25F over a fixed set of tool documents."""

    def __init__(self, documents: Iterable[ToolDocument]) -> None:
        self._names: list[str] = []
        fielded: list[tuple[Counter[str], ...]] = []
        for document in documents:
            self._names.append(document.name)
            description = terms(document.description)
            fielded.append(
                (
                    _counts(terms(document.name)),
                    _counts(description),
                    _counts(terms(" ".join(document.fields))),
                    _counts(description[:1]),
                )
            )
        averages = [
            (sum(sum(doc[f].values()) for doc in fielded) / len(fielded)) or 1.0 if fielded else 1.0
            for f in range(4)
        ]
        weights = (_NAME_WEIGHT, _DESCRIPTION_WEIGHT, _ARGUMENTS_WEIGHT, _ACTION_WEIGHT)
        frequency: Counter[str] = Counter()
        for doc in fielded:
            frequency.update(set().union(*doc))
        total = len(fielded)
        idf = {term: math.log(1 + (total - n + 0.5) / (n + 0.5)) for term, n in frequency.items()}
        self.vocabulary = frozenset(idf)
        # Each tool's score per term, computed once: a query only looks them up.
        self._scores: list[dict[str, float]] = []
        for doc in fielded:
            pseudo: dict[str, float] = {}
            for field, counts in enumerate(doc):
                length = sum(counts.values())
                norm = 1 - _B + _B * length / averages[field]
                for term, count in counts.items():
                    pseudo[term] = pseudo.get(term, 0.0) + weights[field] * count / norm
            self._scores.append(
                {term: idf[term] * tf * (_K1 + 1) / (tf + _K1) for term, tf in pseudo.items()}
            )

    def rank(self, need: str, *, limit: int) -> list[tuple[str, float]]:
        """The tool names best matching ``need``, best first, each with its score;
        only tools sharing at least one word (or related word) with it."""
        query = _query(terms(need), self.vocabulary)
        if not query:
            return []
        whole = sum(weight for weight, _ in query)
        scored = []
        for position, scores in enumerate(self._scores):
            total, matched = 0.0, 0.0
            for weight, expansions in query:
                best = max((w * scores.get(t, 0.0) for t, w in expansions.items()), default=0.0)
                if best > 0:
                    total += weight * best
                    matched += weight
            if total > 0:
                scored.append((self._names[position], total * matched / whole, position))
        # Ties keep registration order, so the same need always gives the same list.
        scored.sort(key=lambda item: (-item[1], item[2]))
        return [(name, score) for name, score, _ in scored[:limit]]


def _counts(found: list[Term]) -> Counter[str]:
    return Counter(term.text for term in found)


def _query(found: list[Term], vocabulary: frozenset[str]) -> list[tuple[float, dict[str, float]]]:
    """Each distinct need word with its weight and what it may match: itself at full
    weight; its related words, and the index's words it is a prefix of or that are a
    prefix of it ("sign" and "signat"), at half weight."""
    weights: dict[str, float] = {}
    for term in found:
        weights[term.text] = max(weights.get(term.text, 0.0), term.weight)
    query = []
    for text, weight in weights.items():
        expansions = {word: _RELATED_WEIGHT for word in RELATED.get(text, ())}
        if len(text) >= _MIN_PREFIX:
            expansions.update(
                (word, _RELATED_WEIGHT)
                for word in vocabulary
                if len(word) >= _MIN_PREFIX and (word.startswith(text) or text.startswith(word))
            )
        expansions[text] = 1.0
        query.append((weight, expansions))
    return query
