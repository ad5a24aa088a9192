"""The cost of the owner check on e-mail: reading Authentication-Results per mail.

Every fetched mail is parsed (``parse_email``) and then judged (``verdict``); the
judging must stay small next to the parsing it follows. Three mails:

* typical: three Authentication-Results headers as a provider writes them
  (comments, a DKIM pass, SPF, DMARC) and one from another server below;
* many: the receiving server's header with one result per DKIM signature, 50 of
  them (a sender can sign as often as it likes);
* hostile: no header from the configured server, and one 64 KiB header written by
  the sender, full of nested comments and quotes (it is parsed in full, then
  ignored: it names another server).

Baseline from the same run: ``parse_email`` of the same mail, which every mail
already goes through. Nothing is asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from bench.common import iterations_parser, ms_row, print_table
from tests.mail_servers import make_message
from wakeful.channels.email.authentication import verdict
from wakeful.channels.email.message import ParsedEmail, parse_email

SERVER = "mx.example.com"
TYPICAL = (
    f"{SERVER}; dkim=pass (2048-bit key; unprotected) header.d=example.com "
    'header.i=@example.com header.s=sel header.b="AbC/12+x"; spf=pass (mx.example.com: '
    "domain of me@example.com designates 192.0.2.1 as permitted sender) "
    "smtp.mailfrom=me@example.com; dmarc=pass (p=REJECT sp=REJECT dis=NONE) "
    "header.from=example.com",
    "arc.example.net; dkim=pass header.d=example.com",
)
MANY = (f"{SERVER}; " + "; ".join(f"dkim=fail header.d=d{i}.example" for i in range(50)),)
HOSTILE = ("evil.test; " + '(a (b (c) "q;" \\) d) ' * 3000,)


def mail(headers: tuple[str, ...]) -> bytes:
    body = "Hello,\n\n" + "A line of an ordinary mail body.\n" * 60
    return make_message("Me <me@example.com>", "Status", body, authentication_results=headers)


def timed(n: int, action: Callable[[], object]) -> list[float]:
    action()  # warm-up, unmeasured
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    args = iterations_parser(__doc__.splitlines()[0], default_n=500).parse_args()
    rows = []
    for name, headers in (("typical", TYPICAL), ("many", MANY), ("hostile", HOSTILE)):
        raw = mail(headers)
        parsed: ParsedEmail = parse_email(raw)
        judge = partial(
            verdict,
            parsed.authentication_results,
            SERVER,
            parsed.from_domain,
            parsed.received_above,
        )
        baseline = timed(args.n, partial(parse_email, raw))
        rows.append(ms_row(f"{name}: parse_email (baseline)", baseline))
        rows.append(ms_row(f"{name}: verdict", timed(args.n, judge)))
        print(f"{name}: {len(raw)} bytes; verdict: {judge().description[:90]}")
    print_table(["measure", "n", "p50 ms", "p99 ms", "max ms"], rows)


if __name__ == "__main__":
    main()
