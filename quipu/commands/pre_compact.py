"""`quipu pre-compact`: the PreCompact hook entry point (the same detached per-session work as session-end).

It never blocks compaction: it prints nothing and exits 0, whatever happens.
"""
from __future__ import annotations

import argparse

from quipu.commands.session_end import register_hook_command


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    register_hook_command(
        sub, "pre-compact", "PreCompact",
        help_text="the PreCompact hook: per-session curator work, detached",
        description="Entry point for Claude Code's PreCompact hook (`quipu pre-compact --hook`). Like "
        "`quipu session-end`, it returns at once and leaves the bounded per-session work to a detached "
        "process holding the sweep lock; it never blocks compaction and never fails. Does nothing inside "
        "quipu's own model children (QUIPU_CHILD). Without --hook the work runs in the foreground.",
    )
