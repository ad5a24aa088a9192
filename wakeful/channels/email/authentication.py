"""Did the receiving mail server authenticate this mail as coming from its From domain?

Anyone can write any ``From:``; what a sender cannot forge is the verdict the
account's own receiving server wrote into an ``Authentication-Results`` header
(RFC 8601) after checking DKIM signatures and DMARC. This module reads those
headers and decides, so ``owner_senders`` is trusted only for mail that really
came from the owner's domain.

The rules, each against a specific forgery:

* Only headers whose authserv-id is the configured ``authserv_id`` count: a
  sender can write an ``Authentication-Results`` header too, naming any server.
* Of those, only the topmost counts. The receiving server prepends its header
  when the mail arrives, so it sits above anything that was in the mail before;
  a header with the same authserv-id further down was written by someone else
  (a server that fails to strip such headers would otherwise let it through).
  Setups that split DKIM and DMARC into two headers still work: the topmost one
  is the last check (DMARC), which passing is enough.
* And only when at most ``authserv_received_above`` ``Received`` headers sit above
  it (default 0). Every server prepends a ``Received`` line as it accepts the
  mail, so a header the sender wrote lies below the receiving server's one; if
  that server stamped nothing (a filter down, a path that skips it) the sender's
  header would otherwise be the topmost naming it. Servers that write their
  header below their own Received line (Gmail) need the count set, and then
  rely on always stamping, as the large providers do.
* Authenticated iff ``dmarc=pass`` with ``header.from`` equal to the From
  domain, or ``dkim=pass`` whose signing domain (``header.d``, else the domain of
  ``header.i``) is aligned with the From domain: equal to it, or a parent of it
  (``header.d=example.com`` covers ``From: a@mail.example.com``) - the
  "relaxed" direction that needs no public-suffix list. A single-label signing
  domain ("com") aligns with nothing.
* ``spf=pass`` alone is never enough: SPF checks the envelope sender, which need
  not be the From address the owner check reads.

Malformed headers and results are skipped, never fatal: the worst a bad header
does is leave the mail untrusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A method or property value the verdict may show: the server wrote it, but parts of
# it (smtp.mailfrom, header.from) are sender-chosen, so it is kept short and printable.
_MAX_VALUE_CHARS = 120
_MAX_RESULTS_SHOWN = 4
_KEYWORD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?")
_PROPERTY = re.compile(r"([A-Za-z0-9_-]+)\s*\.\s*([A-Za-z0-9_-]+)\s*=\s*")
# Properties that explain a verdict; others (header.b, a signature prefix) are noise.
_SHOWN_PROPERTIES = ("header.from", "header.d", "header.i", "header.s", "smtp.mailfrom")


@dataclass(frozen=True)
class MethodResult:
    """One ``method=result`` with its properties, e.g. ``dkim=pass header.d=example.com``."""

    method: str  # lower-case, without a version ("dkim/1" is "dkim")
    result: str  # lower-case
    properties: dict[str, str] = field(default_factory=dict)  # "header.d" -> value

    def describe(self) -> str:
        shown = [
            f"{name}={_printable(self.properties[name])}"
            for name in _SHOWN_PROPERTIES
            if name in self.properties
        ]
        return " ".join([f"{self.method}={self.result}", *shown])


@dataclass(frozen=True)
class AuthenticationResults:
    """One parsed ``Authentication-Results`` header."""

    authserv_id: str  # lower-case
    results: list[MethodResult]


@dataclass(frozen=True)
class Verdict:
    """Whether the mail is authenticated as its From domain, and why, in one line."""

    authenticated: bool
    description: str  # "dkim=pass header.d=example.com (mx.example.com)" or "none"


def parse_authentication_results(value: str) -> AuthenticationResults | None:
    """One header's value; None when not even its authserv-id can be read."""
    pieces = _split_outside_quotes(_without_comments(value), ";")
    authserv_id = _value(pieces[0].strip())[0].lower()
    if not authserv_id:
        return None
    results = [r for r in (_method_result(piece) for piece in pieces[1:]) if r is not None]
    return AuthenticationResults(authserv_id, results)


def verdict(
    header_values: list[str],
    authserv_id: str,
    from_domain: str,
    received_above: list[int] | None = None,
    max_received_above: int = 0,
) -> Verdict:
    """The verdict from a mail's ``Authentication-Results`` values (top to bottom).

    ``received_above``: for each value, the Received headers above it (None: not
    known, the position is not checked); ``max_received_above``: how many the
    receiving server's own header may have (``authserv_received_above``)."""
    wanted = authserv_id.strip().lower()
    if not wanted:
        return Verdict(False, "none")
    found = next(
        (
            (index, parsed)
            for index, parsed in enumerate(map(parse_authentication_results, header_values))
            if parsed is not None and parsed.authserv_id == wanted
        ),
        None,
    )
    if found is None or not found[1].results:
        return Verdict(False, "none")
    index, ours = found
    if received_above is not None and index < len(received_above):
        above = received_above[index]
        if above > max_received_above:
            return Verdict(
                False,
                f"not authenticated: the topmost header naming {wanted} has {above} Received "
                f"line(s) above it, more than authserv_received_above = {max_received_above} "
                "allows, so the sender may have written it (docs/email.md)",
            )
    domain = _domain(from_domain)
    for result in ours.results:
        if domain and _proves_domain(result, domain):
            return Verdict(True, f"{result.describe()} ({wanted})")
    seen = "; ".join(r.describe() for r in ours.results[:_MAX_RESULTS_SHOWN])
    if len(ours.results) > _MAX_RESULTS_SHOWN:  # one per DKIM signature: a sender adds many
        seen += f"; and {len(ours.results) - _MAX_RESULTS_SHOWN} more"
    why = "no From domain" if not domain else f"nothing aligned with {_printable(domain)}"
    return Verdict(False, f"not authenticated ({why}): {seen} ({wanted})")


def _proves_domain(result: MethodResult, domain: str) -> bool:
    if result.result != "pass":
        return False
    if result.method == "dmarc":
        return _domain(result.properties.get("header.from", "")) == domain
    if result.method == "dkim":
        signer = result.properties.get("header.d") or _after_at(
            result.properties.get("header.i", "")
        )
        return _aligned(domain, _domain(signer))
    return False  # spf and the rest do not say who wrote the From header


def _aligned(from_domain: str, signer: str) -> bool:
    if "." not in signer:  # "com" or empty: a signature that covers no one in particular
        return False
    return from_domain == signer or from_domain.endswith("." + signer)


def _domain(value: str) -> str:
    return value.strip().strip('"').lower().rstrip(".")


def _after_at(value: str) -> str:
    return value.rpartition("@")[2]


def _printable(text: str) -> str:
    cleaned = "".join(c if c.isprintable() else "?" for c in text)
    if len(cleaned) > _MAX_VALUE_CHARS:
        return cleaned[:_MAX_VALUE_CHARS] + "..."
    return cleaned


def _method_result(piece: str) -> MethodResult | None:
    """``method[/version] = result [reason=...] [ptype.property=value ...]``, or None."""
    text = piece.strip()
    match = re.match(r"([A-Za-z0-9_-]+)\s*(?:/\s*\d+\s*)?=\s*", text)
    if match is None:
        return None
    rest = text[match.end() :]
    result = _KEYWORD.match(rest)
    if result is None:
        return None
    rest = rest[result.end() :]
    properties: dict[str, str] = {}
    while rest.strip():
        rest = rest.lstrip()
        reason = re.match(r"reason\s*=\s*", rest, re.IGNORECASE)
        if reason is not None:
            _, rest = _value(rest[reason.end() :])
            continue
        prop = _PROPERTY.match(rest)
        if prop is None:
            break  # not a property: stop reading this result, keep what is known
        value, rest = _value(rest[prop.end() :])
        name = f"{prop.group(1)}.{prop.group(2)}".lower()
        properties.setdefault(name, value)
    return MethodResult(match.group(1).lower(), result.group(0).lower(), properties)


def _value(text: str) -> tuple[str, str]:
    """A token, quoted string, or ``local-part@domain`` (the local part may be quoted)."""
    if text.startswith('"'):
        end = _quoted_end(text)
        value = _unquoted(text[: end + 1])
        rest = text[end + 1 :]
        if rest.startswith("@"):
            domain = re.match(r"@[^\s]*", rest)
            assert domain is not None  # "@" itself matches
            return value + domain.group(0), rest[domain.end() :]
        return value, rest
    token = re.match(r"[^\s]*", text)
    assert token is not None  # the empty string matches
    return token.group(0), text[token.end() :]


def _quoted_end(text: str) -> int:
    """The index of the quote closing the string that starts at 0 (or the last index)."""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return len(text) - 1


def _unquoted(text: str) -> str:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    return text


def _without_comments(text: str) -> str:
    """The value with each (possibly nested) comment replaced by a space; quotes kept."""
    out: list[str] = []
    depth = 0
    quoted = False
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and (quoted or depth):
            if not depth:
                out.append(text[i : i + 2])
            i += 2
            continue
        if depth:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if not depth:
                out.append(" ")
        elif quoted:
            out.append(char)
            quoted = char != '"'
        elif char == "(":
            depth = 1
        else:
            out.append(char)
            quoted = char == '"'
        i += 1
    return "".join(out)


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        char = text[i]
        if quoted and char == "\\":
            current.append(text[i : i + 2])
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted:
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    pieces.append("".join(current))
    return pieces
