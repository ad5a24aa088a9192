"""The cheap pre-filter: stop/cancel words and quick questions, several languages.

Only short messages count: "stop" is an interrupt, "don't stop the build
until the tests pass" is not. Matching is on whole words (or whole phrases
for scripts written without spaces).
"""

from __future__ import annotations

import re
import unicodedata

MAX_STOP_WORDS = 6

STOP_PHRASES = (
    # English
    "stop", "cancel", "abort", "halt", "never mind", "nevermind", "kill it", "forget it",
    # German, French, Spanish, Italian, Portuguese, Dutch
    "stopp", "abbrechen", "aufhören", "arrête", "arrete", "annule", "annuler",
    "detente", "detén", "cancela", "cancelar", "ferma", "fermati", "annulla",
    "cancele", "stoppen", "annuleer",
    # Russian, Polish
    "стоп", "остановись", "отмена", "отмени", "przestań", "anuluj",
)  # fmt: skip

# Words that are also everyday words ("es para mañana"): only the whole message.
STOP_WORDS_ALONE = ("para", "pare", "halt", "basta", "enough")

# A stop word right after one of these is not a request to stop ("don't stop").
NEGATIONS = (
    "don't", "dont", "do not", "never", "not", "no need to", "nicht", "ne", "no", "não",
    "non", "niet", "не",
)  # fmt: skip

# "Wait, I was wrong": interrupt the model so it hears the correction, but let
# running tools go on (their results arrive later). Only at the message start.
HOLD_PHRASES = (
    "wait", "hold on", "i was wrong", "actually", "warte", "moment", "attends",
    "espera", "aspetta", "espere", "wacht", "подожди", "czekaj",
)  # fmt: skip

# Scripts written without spaces: matched as substrings of a short message.
STOP_PHRASES_UNSPACED = (
    "停止", "停下", "取消", "别做了",
    "止めて", "やめて", "キャンセル", "ストップ", "中止",
    "멈춰", "취소", "중지",
)  # fmt: skip

QUICK_QUESTIONS = (
    r"\bwhat(?:'s| is) the time\b",
    r"\bwhat time is it\b",
    r"\bwhat(?:'s| is) (?:the |today's )?date\b",
    r"\bwhat day is (?:it|today)\b",
    r"\bquelle heure\b",
    r"\bwie spät\b",
    r"\bqué hora\b",
    r"几点",
    r"何時",
)  # fmt: skip

_QUICK = re.compile("|".join(QUICK_QUESTIONS), re.IGNORECASE)
_WORD = re.compile(r"[\w']+", re.UNICODE)


def _normalized(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def is_stop_request(text: str) -> bool:
    normalized = _normalized(text)
    words = _WORD.findall(normalized)
    if not words or len(words) > MAX_STOP_WORDS:
        return False
    joined = " ".join(words)
    if joined in STOP_WORDS_ALONE:
        return True
    if any(_says(joined, phrase) for phrase in STOP_PHRASES):
        return True
    return len(normalized) <= 20 and any(p in normalized for p in STOP_PHRASES_UNSPACED)


def _says(joined: str, phrase: str) -> bool:
    """The phrase occurs as whole words and not right after a negation."""
    for match in re.finditer(rf"(?:^| ){re.escape(phrase)}(?= |$)", joined):
        before = joined[: match.start()].strip()
        if not any(before == n or before.endswith(" " + n) for n in NEGATIONS):
            return True
    return False


def is_hold_request(text: str) -> bool:
    """ "Wait, …" / "hold on!" / "I was wrong": the phrase must open the message and
    stand alone or be followed by punctuation ("wait for the build" is not one)."""
    normalized = _normalized(text)
    if normalized.startswith(("等一下", "待って")):
        return True
    return any(
        re.match(rf"{re.escape(phrase)}(?:\s*[,!.:;…—-]|$)", normalized) for phrase in HOLD_PHRASES
    )


def is_quick_question(text: str) -> bool:
    normalized = _normalized(text)
    return len(normalized) <= 120 and _QUICK.search(normalized) is not None
