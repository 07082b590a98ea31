"""Printing for the CLI: JSON for machines, short aligned text for people."""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from quipu import __version__, locate


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def progress(done: int, total: int, label: str = "") -> None:
    """A one-line progress bar on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty() or total <= 0:
        return
    width = 30
    filled = int(width * done / total)
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def crash_log(exc: BaseException, argv: Sequence[str]) -> str:
    """Append ``exc``'s traceback to ``$QUIPU_HOME/logs/crash.log``; returns the log's path."""
    directory = os.path.join(locate.quipu_home(), "logs")
    try:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "crash.log")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"--- {_dt.datetime.now().isoformat()} quipu {__version__} {' '.join(argv)}\n")
            fh.write("".join(traceback.format_exception(exc)))
        return path
    except OSError:
        return "(could not write a log)"
