"""The web page's Markdown renderer (static/markdown.js) in headless Chromium: drawing a reply.

A reply like the model's (a heading, emphasis, code and a link, lists, a quote, a code
block, a table) repeated to about 1, 5 and 20 KB, drawn into a chat bubble (the page's
CSS, layout forced) ``--n`` times each: p50/p99/max. Streaming: a ``--stream-size``
reply in the fake model's word tokens, one every ``--token-ms``, drawn as the page draws
it (app.js's streamDelta: at most once a frame, then a pause four times the last draw)
and, for comparison, once every frame: the main thread's time spent drawing, as a share
of the stream's duration. A stranger's worst cases (100 KB of unmatched ``*``, ``[``,
backticks, deep nesting, …), drawn once each. Timed in the page (``performance.now()``),
not over WebDriver.

Baseline in the same run: what the page did before, the text put in the bubble as
``textContent`` (the whole text; ``+=`` per token while streaming).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import REPO_ROOT, percentile, print_table
from tests.browser import chromium
from tests.fakes.model_replies import tokenize

STATIC = REPO_ROOT / "wakeful/channels/chat_web/static"
REPLY = """## Step {n}

Here is **what to do**, *why* it matters, `the_command --flag` and [the docs](https://example.com/docs/{n}).

1. First, check the state:
   - the service is up
   - the disk has room
2. Then run it again.

> Keep a copy of the old config.

```python
def step_{n}(path: str) -> int:
    with open(path) as handle:
        return sum(1 for _ in handle)
```

| option | default | note |
|---|--:|---|
| retries | 3 | per call |

"""
N = 100_000
HOSTILE = {
    "unmatched *": "*a " * (N // 3),
    "unmatched _": "_a " * (N // 3),
    "unmatched backticks": "`` a ` " * (N // 7),
    "unmatched [": "[" * N,
    "[a]( repeated": "[a](" * (N // 4),
    "> nesting": ">" * N,
    "*_ nesting": "*_" * (N // 4) + "x" + "_*" * (N // 4),
    "heading + spaces": "# a" + " " * N + "b",
    "open fence": "```" + "a" * N + "`",
    "table rule + spaces": "|" + "-" + " " * N + "x\n|-|",
    "url + )": "http://a" + ")" * N,
    "bare URLs": "http://x.y/ " * (N // 11),
    "short lines": "a\n" * (N // 2),
    "table rows": "a|b\n-|-\n" + "1|2\n" * (N // 4),
}
# A bubble as the page has it, with the page's own CSS; `mode` is "md" or "text".
SETUP = """
const style = document.createElement('style');
style.textContent = arguments[0];
document.head.append(style);
const list = document.createElement('ol');
list.id = 'messages';
list.innerHTML = '<li class="msg assistant"><div class="body md"></div></li>';
document.body.append(list);
"""
DRAW = """
const [text, n, mode] = arguments;
const body = document.querySelector('#messages .body');
const times = [];
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  body.replaceChildren();  // drawn whole, not into the blocks of the draw before
  if (mode === 'md') renderMarkdown(text, body);
  else body.textContent = text;
  body.offsetHeight;  // layout, as the page's next frame would do it
  times.push(performance.now() - t0);
}
return times;
"""
# Tokens arrive every `gap` ms; "paced" draws as app.js's streamDelta does, "frame" once
# every frame, "text" appends each token as text (the page before Markdown).
STREAM = """
const [tokens, policy, gap, done] = arguments;
const body = document.querySelector('#messages .body');
body.replaceChildren();
let text = '', busy = 0, draws = 0, due = false, pause = 0, i = 0;
const timed = (draw) => {
  const t0 = performance.now();
  draw();
  body.offsetHeight;
  draws++;
  busy += performance.now() - t0;
  return performance.now() - t0;
};
const markdown = () => timed(() => renderMarkdown(text, body));
const start = performance.now();
const next = () => {
  if (i === tokens.length) {
    if (policy !== 'text') markdown();  // the finished reply, drawn once more
    return done({busy, draws, wall: performance.now() - start});
  }
  const token = tokens[i++];
  text += token;
  if (policy === 'text') timed(() => { body.textContent += token; });
  else if (!due && policy === 'frame') {
    due = true;
    requestAnimationFrame(() => { due = false; markdown(); });
  } else if (!due) {
    due = true;
    setTimeout(() => requestAnimationFrame(() => { due = false; pause = 4 * markdown(); }), pause);
  }
  setTimeout(next, gap);
};
next();
"""


def reply_of(size: int) -> str:
    parts: list[str] = []
    while sum(map(len, parts)) < size:
        parts.append(REPLY.format(n=len(parts) + 1))
    return "".join(parts)


def stream_row(label: str, result: dict[str, float]) -> list[str]:
    share = 100 * result["busy"] / result["wall"]
    return [
        label,
        f"{result['draws']:.0f}",
        f"{result['busy']:.0f}",
        f"{result['wall']:.0f}",
        f"{share:.1f} %",
    ]


def row(name: str, times: list[float]) -> list[str]:
    cells = (percentile(times, 50), percentile(times, 99), max(times))
    return [name, str(len(times)), *(f"{v:.2f}" for v in cells)]


def main(n: int, stream_size: int, token_ms: float) -> None:
    with tempfile.TemporaryDirectory(dir=REPO_ROOT) as tmp, chromium(Path(tmp)) as driver:
        driver.get("about:blank")
        driver.execute_script(SETUP, (STATIC / "app.css").read_text())
        # Run as a function body here: its one name is made a global, as the page's is.
        script = (STATIC / "markdown.js").read_text()
        driver.execute_script(script + "\nwindow.renderMarkdown = renderMarkdown;")
        rows = []
        for size in (1_000, 5_000, 20_000):
            text = reply_of(size)
            for mode, label in (("md", "Markdown"), ("text", "baseline: textContent")):
                driver.execute_script(DRAW, text, 5, mode)  # warm-up: the JIT, the styles
                times = driver.execute_script(DRAW, text, n, mode)
                rows.append(row(f"{label}, {len(text)} chars", times))
        tokens = tokenize(reply_of(stream_size))
        driver.set_script_timeout(len(tokens) * token_ms / 1000 * 3 + 60)
        streamed = [
            stream_row(label, driver.execute_async_script(STREAM, tokens, policy, token_ms))
            for policy, label in (
                ("paced", "Markdown, as the page draws it"),
                ("frame", "Markdown, every frame"),
                ("text", "baseline: textContent += token"),
            )
        ]
        hostile = [
            [name, str(len(text)), f"{driver.execute_script(DRAW, text, 1, 'md')[0]:.1f}"]
            for name, text in HOSTILE.items()
        ]
    print(f"drawing a reply into a chat bubble, {n} times each (ms)")
    print_table(["reply", "n", "p50 ms", "p99 ms", "max ms"], rows)
    print(f"\nstreamed: {len(tokens)} tokens ({stream_size} chars), one every {token_ms:g} ms")
    print_table(["drawn", "draws", "drawing ms", "stream ms", "busy drawing"], streamed)
    print("\na stranger's worst cases, drawn once (ms); target: linear, none near 1000 ms")
    print_table(["text", "chars", "ms"], hostile)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="draws of each reply size")
    parser.add_argument("--stream-size", type=int, default=5_000, help="streamed reply, chars")
    parser.add_argument("--token-ms", type=float, default=10.0, help="ms between tokens")
    args = parser.parse_args()
    main(args.n, args.stream_size, args.token_ms)
