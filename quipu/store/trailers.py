"""Commit messages with machine-readable trailers, and the audit log's entries read back from them."""
from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from quipu.lite import NamedTuple
from quipu.store.memory import check_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TRAILER_KEYS = (
    "Quipu-Action",
    "Quipu-Memory",
    "Quipu-Supersedes",
    "Quipu-Sweep",
    "Quipu-Session",
    "Quipu-Label",
    "Quipu-Reverts",  # a claim: quipu.store.effects checks it against what the commit did
    "Quipu-Retracts",
    "Quipu-Verdict",
    "Quipu-Confidence",
    "Quipu-Guards",
)


class LogEntry(NamedTuple):
    """One commit of the audit log: its id, time, summary and ``Quipu-*`` trailers. The summary is
    the commit's first line; in a memory's log, what the commit did to it (``quipu.store.audit``)."""

    commit: str
    time: str
    summary: str
    trailers: dict[str, str]

    @property
    def action(self) -> str:
        return self.trailers.get("Quipu-Action", "")

    @property
    def memory(self) -> str:
        return self.trailers.get("Quipu-Memory", "")

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "time": self.time, "summary": self.summary, "trailers": self.trailers}


def event_dir(memory_id: str) -> str:
    check_id(memory_id)
    return f"events/{memory_id[:2]}/{memory_id}"


def trailer_stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def cut_words(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a space, so no word (a key, an example key) is cut in two."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[:cut.rfind(" ")] if " " in cut else cut


def format_message(summary: str, trailers: Mapping[str, str | None], body: str = "") -> str:
    lines = [cut_words(summary.replace("\n", " "), 200), ""]
    if body:
        lines += [body.strip(), ""]
    for key, value in trailers.items():
        if value is None or value == "":
            continue
        text = str(value).replace("\n", " ").strip()
        lines.append(f"{key}: {text}")
    return "\n".join(lines) + "\n"


def parse_trailers(message: str) -> dict[str, str]:
    """The ``Quipu-*`` trailers of a commit message (the last paragraph)."""
    out: dict[str, str] = {}
    paragraphs = message.strip().split("\n\n")
    for line in paragraphs[-1].splitlines() if paragraphs else []:
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Quipu-"):
            out[key] = value.strip()
    return out
