"""Entry points for the hooks quipu publishes to the pre-commit framework (``.pre-commit-hooks.yaml``).

Both take the file names pre-commit passes, print one ``path: problem`` line per finding and
return 1 when anything was found, 0 otherwise. They gate a commit, so they fail closed.

- ``quipu-validate-frontmatter``: each memory file parses and validates exactly as the store
  reads it (``quipu.store.memory.parse_memory``: closed schema, safe YAML, size and encoding limits),
  and sits at the path its id dictates (``memories/<first two chars>/<id>.md``).
- ``quipu-check-memory-size``: a MEMORY.md or CLAUDE.md stays within Claude Code's load limit
  (200 lines / 25,000 bytes by default, measured as Claude Code measures; see ``quipu.claude.memorymd``).
  Only MEMORY.md is cut by Claude Code; for CLAUDE.md the same numbers are Anthropic's size guidance.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from quipu.claude import memorymd
from quipu.errors import InvalidMemory
from quipu.store.memory import memory_path, parse_memory


def frontmatter_problems(name: str) -> list[str]:
    """What is wrong with one memory file (empty when nothing is)."""
    try:
        data = Path(name).read_bytes()
    except OSError as exc:
        return [f"cannot read it: {exc.strerror or exc}"]
    try:
        memory = parse_memory(data, name)
    except InvalidMemory as exc:
        return [str(exc).removeprefix(f"{name}: ")]
    expected = memory_path(memory.id)
    posix = Path(name).as_posix()
    if posix != expected and not posix.endswith("/" + expected):
        return [f"a memory with id {memory.id!r} belongs at {expected}; move the file or correct its id"]
    return []


def validate_frontmatter_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="quipu-validate-frontmatter",
        description="Validate quipu memory files: frontmatter schema, safe YAML, and path matching the id.",
    )
    parser.add_argument("filenames", nargs="*", help="memory files (memories/<xx>/<id>.md)")
    args = parser.parse_args(argv)
    failed = 0
    for name in args.filenames:
        for problem in frontmatter_problems(name):
            print(f"{name}: {problem}")
            failed = 1
    return failed


def check_memory_size_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="quipu-check-memory-size",
        description="Fail when a MEMORY.md or CLAUDE.md crosses Claude Code's load limit; names the lines "
        "and sections past the cut.",
    )
    parser.add_argument("filenames", nargs="*", help="MEMORY.md / CLAUDE.md files")
    parser.add_argument("--max-lines", type=int, default=memorymd.MAX_LINES, help="line limit (default: %(default)s)")
    parser.add_argument("--max-bytes", type=int, default=memorymd.MAX_BYTES, help="byte limit (default: %(default)s)")
    args = parser.parse_args(argv)
    failed = 0
    for name in args.filenames:
        try:
            result = memorymd.measure_file(name, max_lines=args.max_lines, max_bytes=args.max_bytes)
        except OSError as exc:
            print(f"{name}: cannot read it: {exc.strerror or exc}")
            failed = 1
            continue
        if result.over:
            failed = 1
            print(f"{name}: {result.summary()}")
            for line in result.details():
                print(f"  {line}")
            if Path(name).name.upper().endswith("CLAUDE.MD"):
                print("  - shorten it: move detail into the quipu store (`quipu add`), where it is recalled when relevant")
            else:
                print(f"  - run `quipu import memory-md {name}` to keep every entry searchable, then shorten the index")
    return failed
