"""Workspace confinement: a path is resolved (symlinks, ``..``) before it is checked.

One function decides whether a path a tool was given lies inside the
directories it may touch; the file tools and the policy chain both call it,
so the two can never disagree.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Outside:
    """Why a path was refused, in words for the model."""

    reason: str


def resolve_inside(given: str, workspace: Path, *, also: Sequence[Path] = ()) -> Path | Outside:
    """``given`` resolved against the workspace, or why it is not allowed.

    Relative paths are taken from the workspace; absolute ones must resolve into
    the workspace or one of ``also`` (e.g. the saved tool outputs, read-only).
    Symlinks are followed before the check, also for a path that does not exist
    yet (its nearest existing parent is resolved), so a link cannot lead out.
    """
    if "\0" in given:
        return Outside(f"{given!r} contains a NUL byte")
    # "~" is the workspace: it is HOME for every command the agent runs.
    candidate = (
        Path(given.replace("~", str(workspace), 1)) if given.startswith("~") else Path(given)
    )
    if not candidate.is_absolute():
        candidate = workspace / candidate
    resolved = _resolve(candidate)
    roots = [_resolve(workspace), *(_resolve(root) for root in also)]
    if any(resolved == root or resolved.is_relative_to(root) for root in roots):
        return resolved
    allowed = " or ".join(str(root) for root in roots)
    return Outside(
        f"{given} resolves to {resolved}, outside the workspace; file tools work only "
        f"inside {allowed}. Use a path relative to the workspace."
    )


def _resolve(path: Path) -> Path:
    # strict=False resolves every existing component (symlinks included) and
    # keeps the rest as written, after removing "..".
    return Path(os.path.realpath(path))
