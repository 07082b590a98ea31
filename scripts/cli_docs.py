"""Write docs/cli.md from the commands' own --help text (`python scripts/cli_docs.py`).

`tests/docs_test.py` fails when docs/cli.md is out of date, so the reference never drifts.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from quipu import cli  # noqa: E402

DOC = ROOT / "docs" / "cli.md"


def help_text(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.main([*argv, "--help"])
    return out.getvalue().rstrip()


def render() -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps help text to the terminal's width
    try:
        return _render()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def _render() -> str:
    parts = [
        "# Command reference",
        "",
        f"Generated from each command's `--help` under Python {sys.version_info[0]}.{sys.version_info[1]} by "
        "`python scripts/cli_docs.py`; do not edit by hand.",
        "",
        "```",
        help_text([]),
        "```",
    ]
    for name in cli.COMMANDS:
        parts += ["", f"## quipu {name}", "", "```", help_text([name]), "```"]
        for sub in _subcommands(name):
            parts += ["", f"### quipu {name} {sub}", "", "```", help_text([name, sub]), "```"]
    return "\n".join(parts) + "\n"


def _subcommands(name: str) -> list[str]:
    """The sub-commands of ``quipu NAME`` (``quipu history search`` ...), in their order."""
    top = cli.build_parser(name)
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            for inner in action.choices[name]._actions:
                if isinstance(inner, argparse._SubParsersAction):
                    return list(inner.choices)
    return []


if __name__ == "__main__":
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC}")
