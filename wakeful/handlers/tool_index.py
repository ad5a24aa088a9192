"""Ranking tools against a need in plain words: BM25 over names, descriptions and fields.

``search_tools`` must find "assign_ticket" for "give this ticket to Maria" among
hundreds of tools. BM25 (Okapi, k1=1.2, b=0.75) scores each tool's words; a
light stemmer folds "tickets"/"ticketing" onto "ticket", and a small table of
everyday synonyms ("make" for "create", "remove" for "delete") adds the words a
tool's author would have used, at half weight so an exact word still wins. The
index is built from the frozen registry, and again when tools join later (an
MCP server changed its list). No dependency: the whole ranking is a few dozen lines.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_K1 = 1.2
_B = 0.75
_SYNONYM_WEIGHT = 0.5
_MIN_PREFIX = 4  # shorter words share too many beginnings by chance
# A tool's name says what it is for more precisely than its prose: its words count more.
_NAME_REPEAT = 3

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and any are as at be by can do for from get how i in into is it its me my "  # noqa: SIM905
    "of on or our please so some that the their them then there these this to up us "
    "want we what when where which who will with you your".split()
)

# Groups of words used for the same action or thing; each is folded by _stem first.
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("create", "make", "new", "add", "open", "start", "register", "file"),
    ("delete", "remove", "drop", "erase", "discard", "trash"),
    ("update", "change", "edit", "modify", "set", "rename", "adjust"),
    ("find", "search", "look", "lookup", "query", "locate"),
    ("list", "show", "all", "overview", "enumerate", "browse"),
    ("send", "post", "deliver", "message", "notify", "tell"),
    ("email", "mail", "inbox", "e-mail"),
    ("meeting", "event", "appointment", "calendar", "schedule", "book"),
    ("assign", "give", "hand", "delegate", "owner", "assignee"),
    ("invoice", "bill", "billing", "charge"),
    ("payment", "pay", "refund", "money", "transaction"),
    ("customer", "client", "contact", "account", "lead"),
    ("ticket", "issue", "case", "incident", "support", "bug"),
    ("close", "resolve", "finish", "done", "complete"),
    ("comment", "note", "reply", "annotate"),
    ("commit", "version", "repository", "repo", "git"),
    ("branch", "fork"),
    ("merge", "combine", "pull"),
    ("file", "document", "doc"),
    ("upload", "attach", "store"),
    ("download", "fetch", "retrieve"),
    ("cancel", "stop", "abort", "revoke"),
    ("user", "person", "people", "member", "employee", "colleague"),
    ("report", "summary", "stat", "metric", "analytic"),
    ("price", "cost", "quote"),
    ("time", "clock", "date", "day", "when"),
    ("remind", "reminder", "timer", "alarm", "later"),
    ("chat", "channel", "slack", "room"),
    ("deploy", "release", "ship", "rollout"),
    ("log", "trace", "error", "crash"),
    ("weather", "forecast", "rain", "snow", "temperature", "sunny"),
    ("stock", "inventory", "supply", "reorder", "warehouse"),
    ("low", "short", "shortage", "below", "scarce"),
    ("page", "pager", "alert", "escalation", "duty"),
    ("sign", "signature", "signed", "signer"),
)


def _stem(word: str) -> str:
    """A crude suffix fold, enough to meet plurals and verb forms halfway
    ("created", "creating", "creates" and "create" all become "creat")."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


_SUFFIXES = (
    ("ically", "ic"),
    ("ations", ""),
    ("ation", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("es", ""),
    ("ed", ""),
    ("ly", ""),
    ("s", ""),
)


def words(text: str) -> list[str]:
    """``text``'s stemmed words without stop words; ``_`` and ``-`` split names."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP]


def _synonym_table() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in _SYNONYM_GROUPS:
        stems = {_stem(word) for word in group}
        for stem in stems:
            table.setdefault(stem, set()).update(stems - {stem})
    return {stem: frozenset(others) for stem, others in table.items()}


_SYNONYMS = _synonym_table()


@dataclass(frozen=True)
class ToolDocument:
    """What a tool is searched by."""

    name: str
    description: str
    fields: Sequence[str] = ()  # its argument names (and their descriptions)


class ToolIndex:
    """BM25 over a fixed set of tool documents."""

    def __init__(self, documents: Iterable[ToolDocument]) -> None:
        self._names: list[str] = []
        self._terms: list[Counter[str]] = []
        for document in documents:
            text = " ".join([(document.name + " ") * _NAME_REPEAT, document.description])
            self._names.append(document.name)
            self._terms.append(Counter(words(text + " " + " ".join(document.fields))))
        lengths = [sum(terms.values()) for terms in self._terms]
        self._lengths = lengths
        self._average = (sum(lengths) / len(lengths)) if lengths else 0.0
        frequency: Counter[str] = Counter()
        for terms in self._terms:
            frequency.update(terms.keys())
        total = len(self._terms)
        self._idf = {
            term: math.log(1 + (total - n + 0.5) / (n + 0.5)) for term, n in frequency.items()
        }

    def rank(self, need: str, *, limit: int) -> list[tuple[str, float]]:
        """The tool names best matching ``need``, best first, each with its score;
        only tools sharing at least one word (or synonym) with it."""
        weights = _query_weights(words(need), self._idf)
        scored = []
        for position, terms in enumerate(self._terms):
            score = sum(
                weight * self._term_score(term, terms, self._lengths[position])
                for term, weight in weights.items()
            )
            if score > 0:
                scored.append((self._names[position], score, position))
        # Ties keep registration order, so the same need always gives the same list.
        scored.sort(key=lambda item: (-item[1], item[2]))
        return [(name, score) for name, score, _ in scored[:limit]]

    def _term_score(self, term: str, terms: Counter[str], length: int) -> float:
        count = terms.get(term, 0)
        if not count:
            return 0.0
        norm = _K1 * (1 - _B + _B * length / self._average)
        return self._idf[term] * count * (_K1 + 1) / (count + norm)


def _query_weights(query: list[str], vocabulary: Iterable[str]) -> dict[str, float]:
    """Each query word at full weight; its synonyms and the index's words it is a
    prefix of, or that are a prefix of it ("sign" and "signat"), at half weight."""
    weights: dict[str, float] = {}
    for term in query:
        weights[term] = 1.0
    related: set[str] = set()
    for term in query:
        related.update(_SYNONYMS.get(term, ()))
        if len(term) >= _MIN_PREFIX:
            related.update(
                word
                for word in vocabulary
                if len(word) >= _MIN_PREFIX and (word.startswith(term) or term.startswith(word))
            )
    for word in related:
        weights.setdefault(word, _SYNONYM_WEIGHT)
    return weights
