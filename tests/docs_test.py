"""The command reference is generated from --help and must not drift; every command is documented."""
from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

from quipu import cli

ROOT = Path(__file__).resolve().parent.parent


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cli_docs", ROOT / "scripts" / "cli_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _words_by_section(text: str) -> dict[str, Counter[str]]:
    """Each section's words, layout aside: argparse lays out the same help differently from one
    Python to the next ("-f NOTE.md, --file NOTE.md" in 3.11, "-f, --file NOTE.md" in 3.13)."""
    text = re.sub(r"(?m)(^\s+-\w) (\S+), (--[\w-]+) \2(?=\s)", r"\1, \3 \2", text)
    out: dict[str, Counter[str]] = {}
    for section in re.split(r"\n(?=#{2,3} quipu )", text):
        lines = [line for line in section.splitlines() if not line.startswith("Generated from")]
        out[lines[0] if lines else ""] = Counter(w.strip(",") for line in lines for w in line.split())
    return out


def test_docs_cli_md_matches_every_commands_help() -> None:
    expected = _generator().render()
    actual = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    stale = "docs/cli.md is stale: run `python scripts/cli_docs.py`"
    if f"under Python {sys.version_info[0]}.{sys.version_info[1]} " in actual:
        assert actual == expected, stale
    else:  # written under another Python: the same words in every section, whatever the layout
        assert _words_by_section(actual) == _words_by_section(expected), stale


def test_every_command_has_a_section_and_a_description() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in cli.COMMANDS:
        section = text.split(f"## quipu {name}\n", 1)
        assert len(section) == 2, f"quipu {name} is not documented"
        body = section[1].split("\n## ", 1)[0]
        assert f"usage: quipu {name}" in body
        assert len([line for line in body.splitlines() if line.strip()]) > 4, f"quipu {name} has no help text"
