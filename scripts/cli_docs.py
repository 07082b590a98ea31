"""Write docs/cli.md from the commands' own --help text (`python scripts/cli_docs.py`).

`tests/docs_test.py` fails when docs/cli.md is out of date, so the reference never drifts.
"""
from __future__ import annotations

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
        "Generated from each command's `--help` by `python scripts/cli_docs.py`; do not edit by hand.",
        "",
        "```",
        help_text([]),
        "```",
    ]
    for name in cli.COMMANDS:
        parts += ["", f"## quipu {name}", "", "```", help_text([name]), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC}")
