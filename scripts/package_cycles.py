"""Pairs of packages that import each other: what the layers contract is meant to end.

    python scripts/package_cycles.py [TREE] [--runtime]

TREE is a checkout (default: this one); ``--runtime`` leaves out imports made only for
type checking. Prints the two-way pairs among the top-level packages of ``wakeful`` and
among their subpackages; lint-imports enforces the direction, this counts what is left.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grimp


def owner(module: str, depth: int) -> str | None:
    parts = module.split(".")
    return ".".join(parts[: depth + 1]) if len(parts) > depth else None


def two_way_pairs(graph: grimp.ImportGraph, depth: int) -> list[tuple[str, str]]:
    edges = set()
    for module in graph.modules:
        a = owner(module, depth)
        for imported in graph.find_modules_directly_imported_by(module):
            b = owner(imported, depth)
            if a and b and a != b and not (a.startswith(b + ".") or b.startswith(a + ".")):
                edges.add((a, b))
    return sorted({(min(a, b), max(a, b)) for a, b in edges if (b, a) in edges})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tree", nargs="?", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--runtime", action="store_true", help="leave out type-only imports")
    args = parser.parse_args()
    sys.path.insert(0, args.tree)
    graph = grimp.build_graph(
        "wakeful", include_external_packages=False, exclude_type_checking_imports=args.runtime
    )
    for depth, label in ((1, "packages"), (2, "subpackages")):
        pairs = two_way_pairs(graph, depth)
        print(f"{label}: {len(pairs)} pairs import each other")
        for a, b in pairs:
            print(f"  {a} <-> {b}")


if __name__ == "__main__":
    main()
