"""HTML to the text a reader sees: structure kept, markup and code dropped."""

from __future__ import annotations

from wakeful.tools.page_text import html_to_text

BASE = "https://docs.example/guide/intro"


def test_preformatted_text_keeps_its_indentation() -> None:
    text = html_to_text("<p>Run:</p><pre>def f():\n    return 1\n</pre><p>Done.</p>", BASE)
    assert "def f():\n    return 1" in text
    assert text.startswith("Run:") and text.endswith("Done.")


def test_whitespace_outside_pre_collapses() -> None:
    assert html_to_text("<p>  many \n\n  spaces\there </p>", BASE) == "many spaces here"


def test_links_are_made_absolute_and_fragments_left_out() -> None:
    text = html_to_text(
        '<p><a href="../api">API</a> <a href="#top">top</a> <a href="javascript:x()">js</a>'
        ' <a href="https://other.example/">https://other.example/</a></p>',
        BASE,
    )
    assert text == "API (https://docs.example/api) top js https://other.example/"


def test_scripts_styles_and_templates_are_not_text() -> None:
    html = (
        "<html><head><title>T</title><meta name=x><script>bad()</script></head><body>"
        "<noscript>enable js</noscript><template><p>hidden</p></template>"
        "<svg><text>drawing</text></svg><p>shown</p><style>p{}</style></body></html>"
    )
    assert html_to_text(html, BASE) == "Title: T\n\nshown"


def test_headings_items_and_images() -> None:
    html = '<h2>Part</h2><ol><li>one</li><li>two <img alt="a chart"></li></ol>'
    assert html_to_text(html, BASE) == "## Part\n\n- one\n- two [image: a chart]"


def test_entities_are_decoded() -> None:
    assert html_to_text("<p>a &amp; b &lt;c&gt; &#233;</p>", BASE) == "a & b <c> é"
