"""The words a tool search compares: stems, everyday phrases and related words.

Both sides — a tool's name and description, and a need said in plain words —
go through :func:`terms`, so "tickets", "ticketing" and "ticket" meet, "on
call" is one term (not a "call" to log), and "running out" is the same thing as
"low". The tables are ordinary English, written for any tool set: what a word
means, never which tool should win.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a about an and any are as at be been both by can could do does for from get has have "  # noqa: SIM905
    "how i in into is it its just let me my of on or our please should so some that the "
    "their them then there these this to up us want we what when where which who will "
    "with would you your".split()
)
# Words saying *when* ("for Tuesday", "last month"): they name an argument's value,
# rarely the tool, so they count for less — unless the need is about a period.
_TIME = frozenset(
    "today tonight tomorrow yesterday now morning afternoon evening night nights week weeks "  # noqa: SIM905
    "weekend month months year years quarter day days hour hours minute minutes last next "
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december".split()
)
TIME_WEIGHT = 0.3

# Phrases that mean one thing, and words that mean what a phrase does: each
# becomes the single term on the right (spelled with "_", which no word has).
_PHRASES: dict[str, str] = {
    "on call": "on_call",
    "on duty": "on_call",
    "paged": "on_call",
    "paging": "on_call",
    "run out": "low_stock",
    "ran out": "low_stock",
    "out of stock": "low_stock",
    "sold out": "low_stock",
    "low stock": "low_stock",
    "time off": "time_off",
    "day off": "time_off",
    "days off": "time_off",
    "sign in": "sign_in",
    "log in": "sign_in",
    "pull request": "pull_request",
    "merge request": "pull_request",
    "out of office": "out_of_office",
    "credit note": "credit_note",
    "due date": "deadline",
    "past due": "overdue",
    "not paid": "unpaid",
    "not been paid": "unpaid",
    "not yet paid": "unpaid",
    "never paid": "unpaid",
    "been paid": "paid",
    "roll back": "rollback",
    "back out": "rollback",
    "set up": "setup",
}

# Groups of words for the same action or thing, searched at half weight: an exact
# word still wins. Verbs are listed with the sense a request gives them ("bill a
# customer" is to invoice them).
_RELATED: tuple[tuple[str, ...], ...] = (
    ("create", "make", "new", "add", "open", "start", "register", "file", "put", "draft"),
    ("delete", "remove", "drop", "erase", "discard", "trash"),
    ("update", "change", "edit", "modify", "set", "rename", "adjust", "move", "correct"),
    ("find", "search", "look", "lookup", "query", "locate"),
    ("list", "show", "all", "overview", "enumerate", "browse", "which"),
    ("send", "post", "deliver", "message", "notify", "tell"),
    ("email", "mail", "inbox", "e-mail"),
    ("meeting", "event", "appointment", "calendar", "schedule", "book"),
    ("assign", "give", "hand", "delegate", "owner", "assignee", "responsible"),
    ("invoice", "bill", "billing", "charge"),
    ("payment", "pay", "refund", "money", "transaction", "reimburse"),
    ("customer", "client", "contact", "account", "lead"),
    ("ticket", "issue", "case", "incident", "support", "bug"),
    ("close", "resolve", "finish", "done", "complete", "solved"),
    ("comment", "note", "reply", "annotate", "record", "log"),
    ("commit", "version", "repository", "repo", "git"),
    ("branch", "fork"),
    ("merge", "combine", "pull_request"),
    ("file", "document", "doc"),
    ("upload", "attach", "store"),
    ("download", "fetch", "retrieve"),
    ("cancel", "stop", "abort", "revoke", "end", "terminate"),
    ("user", "person", "people", "member", "employee", "colleague", "someone"),
    ("report", "summary", "stat", "metric", "analytic"),
    ("price", "cost", "quote"),
    ("time", "clock", "date", "when"),
    ("remind", "reminder", "timer", "alarm", "later"),
    ("chat", "channel", "slack", "room"),
    ("deploy", "release", "ship", "rollout", "roll"),
    ("undo", "revert", "rollback", "previous"),
    ("return", "back", "refund"),  # "give the money back"
    ("log", "trace", "error", "crash"),
    ("weather", "forecast", "rain", "snow", "temperature", "sunny"),
    ("stock", "inventory", "supply", "reorder", "warehouse"),
    ("low", "low_stock", "short", "shortage", "below", "scarce"),
    ("on_call", "pager", "alert", "escalation", "duty"),
    ("sign", "signature", "signed", "signer"),
    ("lock", "disable", "block", "suspend", "deactivate"),
    ("leave", "vacation", "holiday", "time_off", "sick"),
    ("expense", "receipt", "reimbursement", "claim"),
    ("flight", "plane", "fly", "airline", "seat"),
    ("hotel", "room", "accommodation", "stay", "night"),
    ("unpaid", "overdue", "outstanding", "owed", "due"),
    ("deadline", "due"),
    ("free", "available", "availability", "busy"),
)


@lru_cache(maxsize=8192)  # a tool set repeats its words; folding each once keeps the build cheap
def stem(word: str) -> str:
    """Porter's first step, and a little more: plurals and verb forms fold onto one
    stem ("tickets", "ticketing" → "ticket"; "paged", "page" → "page"; "creates",
    "created", "creating" → "creat")."""
    if len(word) <= 3:
        return word
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied"):
        word = word[:-3] + "y"
    for suffix in ("ations", "ation", "ingly", "ing", "edly", "ed"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and _has_vowel(base):
            word = _restore(base)
            break
    if word.endswith("ally") and len(word) > 6:
        word = word[:-4]  # "electronically" → "electronic"
    elif word.endswith("ly") and len(word) > 5 and not word.endswith("ply"):
        word = word[:-2]  # "weekly" → "week", but "supply" stays
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def _has_vowel(text: str) -> bool:
    return any(c in "aeiouy" for c in text)


def _restore(base: str) -> str:
    """After "-ed"/"-ing": "stopp" → "stop", "pag" → "page", "creat" stays."""
    if base.endswith(("at", "bl", "iz")):
        return base + "e"
    if len(base) >= 2 and base[-1] == base[-2] and base[-1] not in "lsz":
        return base[:-1]
    if len(base) == 3 and _cvc(base):  # a short word lost its "e": "pag(e)d", "us(e)d"
        return base + "e"
    return base


def _cvc(text: str) -> bool:
    vowels = "aeiou"
    return text[-1] not in vowels + "wxy" and text[-2] in vowels and text[-3] not in vowels


class Term(NamedTuple):
    text: str
    weight: float = 1.0  # TIME_WEIGHT for a word saying when


def terms(text: str) -> list[Term]:
    """``text``'s terms in order: stems, with phrases joined and stop words dropped;
    ``_`` and ``-`` split names ("get_on_call" has the phrase "on call")."""
    raw = _WORD.findall(text.lower())
    stems = [stem(word) for word in raw]
    found: list[Term] = []
    index = 0
    while index < len(raw):
        joined = _phrase_at(raw, stems, index)
        if joined is not None:
            concept, length = joined
            found.append(Term(concept))
            index += length
            continue
        word = raw[index]
        if word not in _STOP and len(word) > 1:  # "customer's" leaves an "s"
            found.append(Term(stems[index], TIME_WEIGHT if word in _TIME else 1.0))
        index += 1
    return found


def words(text: str) -> list[str]:
    return [term.text for term in terms(text)]


def _phrase_at(raw: list[str], stems: list[str], index: int) -> tuple[str, int] | None:
    if stems[index] in _PHRASE_STARTS:
        for length in (3, 2):
            if index + length <= len(stems):
                concept = _STEMMED_PHRASES.get(" ".join(stems[index : index + length]))
                if concept is not None:
                    return concept, length
    # One word is taken as written: "paged" is someone on call, a "page" is not.
    concept = _PHRASES.get(raw[index])
    return (concept, 1) if concept is not None else None


_STEMMED_PHRASES = {
    " ".join(stem(w) for w in k.split()): v for k, v in _PHRASES.items() if " " in k
}
_PHRASE_STARTS = frozenset(phrase.split()[0] for phrase in _STEMMED_PHRASES)


def _related_table() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in _RELATED:
        stems = {word if "_" in word else stem(word) for word in group}
        for one in stems:
            table.setdefault(one, set()).update(stems - {one})
    return {one: frozenset(others) for one, others in table.items()}


RELATED = _related_table()
