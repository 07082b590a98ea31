"""`quipu hook EVENT`: run one of quipu's Claude Code hooks from the `quipu` on PATH.

This is what `quipu install claude --project` writes into the project's committed settings, so
they name no path of the machine that ran the install: every teammate's `quipu` (a pipx or uv
tool install, say) runs it. EVENT is ``prompt`` (UserPromptSubmit recall, on the real stdin and
stdout, exit 0 with no output on any error) or ``session-start``, ``session-end``,
``pre-compact`` (through quipu's fail-open session launcher, ``hooks/quipu_hook.py``).
"""
from __future__ import annotations

import argparse
import runpy
import sys

EVENTS = ("prompt", "session-start", "session-end", "pre-compact")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "hook", help="run one of quipu's Claude Code hooks (what a project install writes)",
        description="Run a quipu hook for Claude Code with the hook's event on stdin; it fails open (exit 0, "
        "no output, one line in $QUIPU_HOME/logs) whatever goes wrong.",
    )
    p.add_argument("event", choices=EVENTS, help="the hook to run")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.event == "prompt":
        sys.stdout = sys.__stdout__  # the hook writes its JSON itself, and exits at once
        from quipu.prompt.hook import run_as_hook

        run_as_hook()
        return 0  # not reached: run_as_hook exits
    from quipu.store import assets

    try:
        launcher = runpy.run_path(str(assets.hooks_dir() / "quipu_hook.py"), run_name="quipu_hook")
        launcher["main"]([args.event])
    except BaseException:  # noqa: BLE001 - a session hook fails open; the launcher logs what it can
        pass
    return 0
