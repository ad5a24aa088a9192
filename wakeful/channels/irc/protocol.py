"""IRC lines: parsing what the server sends, and cutting replies to fit 512 bytes.

RFC 1459/2812 framing with IRCv3 message tags (``@k=v;k2 :prefix CMD p1 :trailing``).
A line the server relays to the reader is ``:nick!user@host PRIVMSG target :text``
plus CRLF within 512 bytes, so what may be sent as text is 512 minus that whole
prefix; the bot does not know its own user@host as others see it (cloaks, ident),
so the budget counts the longest user and host a server allows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LINE_BYTES = 512  # RFC 2812 2.3, CRLF included; tags have their own budget
MAX_USER_BYTES = 18  # USERLEN on the most generous networks (with ~)
MAX_HOST_BYTES = 63  # a host name label limit; cloaks stay below it
MIN_TEXT_BYTES = 64  # below this the target is absurd; refuse rather than send crumbs


@dataclass(frozen=True)
class Line:
    command: str
    params: list[str]
    prefix: str = ""
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def nick(self) -> str:
        return self.prefix.split("!", 1)[0]


def _unescape_tag(value: str) -> str:
    out: list[str] = []
    chars = iter(value)
    for ch in chars:
        if ch != "\\":
            out.append(ch)
            continue
        nxt = next(chars, "")
        out.append({":": ";", "s": " ", "r": "\r", "n": "\n", "\\": "\\"}.get(nxt, nxt))
    return "".join(out)


def parse_line(raw: str) -> Line | None:
    """One line without its CRLF; None for an empty or unreadable one."""
    rest = raw.rstrip("\r\n")
    tags: dict[str, str] = {}
    if rest.startswith("@"):
        tag_part, _, rest = rest.partition(" ")
        for item in tag_part[1:].split(";"):
            key, _, value = item.partition("=")
            if key:
                tags[key] = _unescape_tag(value)
        rest = rest.lstrip(" ")
    prefix = ""
    if rest.startswith(":"):
        prefix, _, rest = rest[1:].partition(" ")
        rest = rest.lstrip(" ")
    if not rest:
        return None
    head, sep, trailing = rest.partition(" :")
    words = head.split()
    if not words:
        return None
    params = words[1:] + ([trailing] if sep else [])
    return Line(words[0].upper(), params, prefix, tags)


def format_line(command: str, *params: str) -> str:
    """A line to send (without CRLF); only the last parameter may hold spaces."""
    for param in params[:-1]:
        if not param or " " in param or param.startswith(":"):
            raise ValueError(f"middle parameter {param!r} cannot be sent")
    for param in params:
        if any(ch in param for ch in "\r\n\0"):
            raise ValueError("an IRC parameter cannot hold CR, LF or NUL")
    if not params:
        return command
    last = params[-1]
    # The colon only where the last parameter needs it: some servers read
    # "AUTHENTICATE :+" or "CAP LS :302" less kindly than the plain form.
    if not last or " " in last or last.startswith(":"):
        last = f":{last}"
    return " ".join([command, *params[:-1], last])


def text_budget(nick: str, target: str) -> int:
    """Bytes of PRIVMSG text that fit in one line as the server relays it to others."""
    relayed = (
        len(b":") + len(nick.encode()) + len(b"!") + MAX_USER_BYTES + len(b"@") + MAX_HOST_BYTES
    )
    relayed += len(b" PRIVMSG ") + len(target.encode()) + len(b" :") + len(b"\r\n")
    budget = LINE_BYTES - relayed
    if budget < MIN_TEXT_BYTES:
        raise ValueError(f"target {target!r} leaves too little room for text in a line")
    return budget


def split_bytes(line: str, budget: int) -> list[str]:
    """``line`` cut into pieces of at most ``budget`` UTF-8 bytes, never inside a
    character, preferably at a space; their concatenation is ``line``. The space
    goes to the start of the next piece: servers strip a trailing one (ngircd does)."""
    if budget < 4:
        raise ValueError("budget must hold one UTF-8 character")
    pieces: list[str] = []
    rest = line
    while len(rest.encode()) > budget:
        fit = _chars_within(rest, budget)
        space = rest.rfind(" ", 0, fit + 1)  # a space just past the room is a fine cut too
        cut = len(rest[:space].rstrip(" ")) if space >= 0 else 0
        if cut < max(1, fit // 2):  # never an empty piece
            cut = fit
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        pieces.append(rest)
    return pieces


def _chars_within(text: str, budget: int) -> int:
    """How many leading characters of ``text`` fit in ``budget`` bytes (at least one)."""
    used = 0
    for index, ch in enumerate(text):
        used += len(ch.encode())
        if used > budget:
            return max(index, 1)
    return len(text)


def clean_text(text: str) -> str:
    """Control characters IRC framing forbids (CR, NUL) removed; other C0 controls
    (except tab and the formatting codes) dropped so a reply cannot fake a CTCP."""
    keep = {"\t", "\n", "\x02", "\x1d", "\x1f", "\x0f", "\x03"}
    return "".join(ch for ch in text if ch >= " " or ch in keep)


def privmsg_lines(text: str, budget: int, lead: str = "") -> list[str]:
    """The texts of the PRIVMSGs one message becomes: one per non-blank line (IRC
    has no empty message), each cut to ``budget`` bytes; ``lead`` (``"alice: "``
    in a channel) goes before the first."""
    # A line's trailing blanks would be stripped by the server anyway.
    lines = [line.rstrip() for line in clean_text(text).split("\n") if line.strip()]
    if lead and lines:
        lines[0] = lead + lines[0]
    return [piece for line in lines for piece in split_bytes(line, budget)]
