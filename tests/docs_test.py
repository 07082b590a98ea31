"""The command reference is generated from --help and must not drift; every command is documented."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from quipu import cli

ROOT = Path(__file__).resolve().parent.parent


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cli_docs", ROOT / "scripts" / "cli_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_cli_md_matches_every_commands_help() -> None:
    expected = _generator().render()
    actual = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert actual == expected, "docs/cli.md is stale: run `python scripts/cli_docs.py`"


def test_every_command_has_a_section_and_a_description() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in cli.COMMANDS:
        section = text.split(f"## quipu {name}\n", 1)
        assert len(section) == 2, f"quipu {name} is not documented"
        body = section[1].split("\n## ", 1)[0]
        assert f"usage: quipu {name}" in body
        assert len([line for line in body.splitlines() if line.strip()]) > 4, f"quipu {name} has no help text"
