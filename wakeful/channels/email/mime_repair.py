"""What real mail clients send that the standard library reads too strictly.

Each rule here comes from a real message (tests/corpus/email/README.md):

* ``gb2312``-labelled text is GBK in practice (Outlook, Foxmail): decoded
  strictly it showed replacement characters. The GB family is decoded as
  gb18030, their common superset; text whose label is wrong altogether
  (UTF-8 labelled GB2312) is tried as UTF-8 before anything is replaced.
* An unquoted ``boundary=----=_NextPart_...`` is cut at the first ``=`` by
  the parser and the whole body was lost: the value is quoted and the
  message parsed again.
* An RFC 2047 encoded-word written as an unquoted parameter
  (``filename==?UTF-8?B?...?=``) is not decoded by the parser: the raw
  parameter is decoded here so the attachment is not "(unnamed)".
* A forwarded message (``message/rfc822``) is the body of many mails; its
  parts are found here so its text can be shown.
"""

from __future__ import annotations

import codecs
import re
from email import policy
from email.errors import StartBoundaryNotFoundDefect
from email.header import decode_header
from email.message import EmailMessage, Message, MIMEPart
from email.parser import BytesParser

# Labels mail clients use for Simplified Chinese text; gb18030 decodes all of them.
_GB_FAMILY = frozenset({"gb2312", "gbk", "x-gbk", "cp936", "euc-cn", "csgb2312", "gb_2312-80"})
_UNQUOTED_BOUNDARY = re.compile(rb'(boundary=)(?!")([^\s;"]*=[^\s;"]*)', re.IGNORECASE)
_RAW_PARAM = re.compile(r"(?:^|;)\s*(?:file)?name\s*=\s*(=\?[^;]+?\?=)\s*(?:;|$)", re.IGNORECASE)


def _parse(raw: bytes) -> EmailMessage:
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(msg, EmailMessage)  # policy.default always builds EmailMessage
    return msg


def _lost_boundary(msg: EmailMessage) -> bool:
    return any(
        isinstance(defect, StartBoundaryNotFoundDefect)
        for part in msg.walk()
        for defect in part.defects
    )


def parse_repaired(raw: bytes) -> EmailMessage:
    """The parsed message; parsed again with unquoted boundaries quoted if that lost parts."""
    msg = _parse(raw)
    if _lost_boundary(msg):
        fixed = _UNQUOTED_BOUNDARY.sub(rb'\1"\2"', raw)
        if fixed != raw:
            return _parse(fixed)
    return msg


def _codec(charset: str | None) -> str:
    label = (charset or "utf-8").strip().lower()
    if label in _GB_FAMILY:
        return "gb18030"
    try:
        return codecs.lookup(label).name
    except LookupError:
        return "utf-8"


def decode_text(payload: bytes, charset: str | None) -> str:
    """The declared charset (GB family as gb18030), else UTF-8, else the declared one
    with replacement characters: never an exception, and no needless replacements."""
    codec = _codec(charset)
    for attempt in dict.fromkeys((codec, "utf-8")):
        try:
            return payload.decode(attempt)
        except UnicodeDecodeError:
            continue
    return payload.decode(codec, "replace")


def decode_words(raw: str) -> str:
    """An RFC 2047 header value decoded with :func:`decode_text`'s charset rules (the
    parser decodes ``=?gb2312?...?=`` strictly, with replacement characters)."""
    try:
        chunks = decode_header(" ".join(raw.split()))
    except (LookupError, ValueError):
        return raw
    return "".join(
        decode_text(chunk, charset) if isinstance(chunk, bytes) else chunk
        for chunk, charset in chunks
    )


def raw_header(part: Message, name: str) -> str | None:
    """The header as sent, before the parser's decoding."""
    for key, value in part.raw_items():
        if key.lower() == name.lower():
            return str(value)
    return None


def attachment_name(part: Message) -> str:
    """The part's file name, decoded (RFC 2231 by the parser, RFC 2047 here too)."""
    name = part.get_filename()
    if name and "=?" not in name:
        return name
    # The raw header: the parsed one has already dropped the unquoted parameter.
    for header in ("content-disposition", "content-type"):
        match = _RAW_PARAM.search(" ".join((raw_header(part, header) or "").split()))
        if match:
            return decode_words(match.group(1))
    return name or ""


def forwarded_messages(msg: EmailMessage) -> list[EmailMessage]:
    """Messages enclosed as message/rfc822 parts (``msg`` itself may be one), not
    those inside them (the caller recurses), in order; iterative, so a deep MIME
    tree cannot exhaust the stack."""
    found: list[EmailMessage] = []
    stack: list[MIMEPart] = [msg]
    while stack:
        part = stack.pop()
        children = list(part.iter_parts())
        if part.get_content_type() == "message/rfc822":
            found.extend(p for p in children if isinstance(p, EmailMessage))
        elif part.is_multipart():
            stack.extend(reversed(children))
    return found
