"""Printing for the CLI: JSON for machines, short aligned text for people."""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time
from collections.abc import Sequence

from quipu import __version__
from quipu.prompt import fence
from quipu.prompt import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def print_json(value: Any) -> None:
    """``value`` as JSON: the exact text, with every character a terminal could act on escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if fence.has_unsafe(text):  # C1 controls and invisible characters: json leaves them raw
        for ch in sorted(ch for ch in set(text) if fence.unsafe(ch)):  # each distinct one, not each character
            text = text.replace(ch, _json_escape(ch))
    sys.stdout.write(text + "\n")


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells a character past the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class CleanWriter:
    """A text stream that drops escape sequences and control characters and shows invisible
    characters escaped (``fence.clean``) in everything written to it: stored text never drives
    the terminal the CLI prints to, nor hides from the person reading it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(fence.clean(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in cells]
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


class Progress:
    """``progress`` for a loop of many short steps: drawn at most ten times a second and at the
    last step, and only once the work has taken ``after`` seconds (a short run prints nothing);
    ``done`` ends a line that was drawn. ``update`` may say the total when it is known only then
    (a callback given ``(done, total)``). Nothing when stderr is not a terminal."""

    def __init__(self, total: int, label: str, after: float = 0.0) -> None:
        self.total, self.label = total, label
        self._on = sys.stderr.isatty()
        self._next = time.monotonic() + after
        self._drawn = False
        self._last = 0

    def update(self, done: int, total: int | None = None) -> None:
        if total is not None:
            self.total = total
        if not self._on or self.total <= 0:
            return
        now = time.monotonic()
        if now < self._next and not (done >= self.total and self._drawn):
            return
        self._next, self._drawn, self._last = now + 0.1, True, done
        progress(done, self.total, self.label)

    def done(self) -> None:
        if self._on and self._drawn and self._last < self.total:
            progress(self.total, self.total, self.label)
            self._last = self.total


def crash_log(exc: BaseException, argv: Sequence[str]) -> str:
    """Append ``exc``'s traceback to ``$QUIPU_HOME/logs/crash.log``; returns the log's path."""
    try:
        directory = os.path.join(locate.quipu_home(), "logs")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "crash.log")
        # Text that is not UTF-8 (an argument's raw bytes, a file name) is written escaped.
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(f"--- {_dt.datetime.now().isoformat()} quipu {__version__} {' '.join(map(str, argv))}\n")
            import traceback

            fh.write("".join(traceback.format_exception(exc)))
        return path
    except Exception:  # noqa: BLE001 - a log that cannot be written must not become a second crash
        return "(could not write a log)"
