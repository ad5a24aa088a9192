"""The repository's documentation stays true: generated parts are fresh, links resolve."""

from __future__ import annotations

import re
from pathlib import Path

from wakeful.app.config_reference import render

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)]+)\)")
# Code shows Markdown as written (`![alt](url)` in operations.md is an example, not a link).
CODE = re.compile(r"^```.*?^```|`[^`\n]+`", re.MULTILINE | re.DOTALL)


def test_configuration_reference_is_generated_from_the_models() -> None:
    """docs/configuration.md is what the config models say (regenerate it when this fails:
    python -m wakeful.app.config_reference > docs/configuration.md)."""
    assert (ROOT / "docs" / "configuration.md").read_text() == render()


def test_links_stay_inside_the_repository_and_resolve() -> None:
    """Every relative link names a file in the repository; nothing points outside it."""
    for document in DOCUMENTS:
        text = document.read_text()
        assert "../shared" not in text, document
        for target in LINK.findall(CODE.sub("", text)):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            path = (document.parent / target.split("#")[0]).resolve()
            assert path.is_relative_to(ROOT) and path.exists(), f"{document.name}: {target}"


def test_every_config_section_is_in_the_reference() -> None:
    """A section added to the models appears in the reference under its TOML name."""
    from wakeful.app.config import Settings

    text = render()
    for name in Settings.model_fields:
        assert f"[{name}]" in text, name
