"""The configuration reference (docs/configuration.md), generated from the config models.

``python -m wakeful.app.config_reference > docs/configuration.md`` rewrites it; a
test fails when the file is stale, so the reference cannot drift from the code.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from wakeful.app.config import ENV_PREFIX, Settings
from wakeful.kernel.config_files import toml_value as _toml

HEADER = """\
# Configuration reference

wakeful reads one TOML file (`wakeful run -c FILE`; without `-c`:
`$WAKEFUL_CONFIG`, else the first of `./wakeful.toml`,
`$XDG_CONFIG_HOME/wakeful/wakeful.toml` and `/etc/wakeful/wakeful.toml`; with
none, the embedded defaults). Every key has a default. Any key of a `[section]`
can be overridden from the environment as `WAKEFUL_<SECTION>__<KEY>` (the
environment wins over the file). Secrets can come from files (`*_file` keys): a
relative path is read from `$CREDENTIALS_DIRECTORY` under systemd, else from
`credentials/` beside the config file, else beside the config file.

`wakeful init` writes a commented starter file. This page is generated from the
configuration models (`python -m wakeful.app.config_reference`); do not edit it
by hand.
"""


def render() -> str:
    parts = [HEADER]
    fields = Settings.model_fields
    core = [name for name in Settings.__annotations__ if name in fields]
    for name in [*core, *(name for name in fields if name not in core)]:
        parts.extend(_section(name, fields[name]))
    return "\n".join(parts).rstrip() + "\n"


def _section(name: str, field: FieldInfo) -> Iterator[str]:
    model, is_list = _model_of(field.annotation)
    if model is None:
        return
    title = f"[[{name}]]" if is_list else f"[{name}]"
    yield f"## `{title}`\n"
    doc = (model.__doc__ or "").strip()
    if doc and not doc.startswith(("Usage docs", "A base class")):
        yield doc.splitlines()[0] + "\n"
    if is_list:
        yield "A list of tables; the environment cannot override it.\n"
    yield from _table(model, None if is_list else name)
    for key, inner in model.model_fields.items():
        nested, nested_list = _model_of(inner.annotation)
        if nested is not None and nested_list:
            yield f"### `[[{name}.{key}]]`\n"
            yield from _table(nested, None)


def _table(model: type[BaseModel], env_section: str | None) -> Iterator[str]:
    yield "| key | type | default | meaning |"
    yield "|---|---|---|---|"
    for key, field in model.model_fields.items():
        nested, nested_list = _model_of(field.annotation)
        if nested is not None and nested_list:
            continue  # its own table below
        meaning = (field.description or "").replace("\n", " ")
        if env_section is not None:
            env = f"{ENV_PREFIX}{env_section.upper()}__{key.upper()}"
            meaning = f"{meaning} Environment: `{env}`.".strip()
        example = field.examples[0] if field.examples else None
        if example is not None and not _is_secret(field):
            meaning += f" Example: `{key} = {_toml(example)}`."
        yield f"| `{key}` | {_type_name(field.annotation)} | {_default(field)} | {meaning} |"
    yield ""


def _model_of(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds, and whether it is a list of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item, True
    return None, False


def _type_name(annotation: Any) -> str:
    text = str(annotation).replace("typing.", "").replace("pathlib.", "")
    text = text.replace("<class '", "").replace("'>", "").replace("pydantic.types.", "")
    text = text.replace("Literal", "one of ").replace("NoneType", "none")
    return text.replace("|", "or")


def _default(field: FieldInfo) -> str:
    if _is_secret(field):
        return "(unset)"
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "(unset)"
    if isinstance(value, BaseModel):
        return "(table)"
    return f"`{_toml(value)}`"


def _is_secret(field: FieldInfo) -> bool:
    return "SecretStr" in str(field.annotation) or field.annotation is SecretStr


if __name__ == "__main__":
    sys.stdout.write(render())
