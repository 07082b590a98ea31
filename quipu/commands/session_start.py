"""`quipu session-start`: the always-on layer (profile and always-on rules) for a new session.

With ``--hook`` it is Claude Code's SessionStart hook: the event JSON on stdin (sources
startup, resume, clear, compact; fork too), and on stdout
``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ...}}``. The
hook fails open: any error means exit 0 and no output (one line goes to
``$QUIPU_HOME/logs/hook.log``), and it does nothing inside quipu's own model children
(``QUIPU_CHILD``) or in a session started with ``QUIPU_RECALL=off``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from quipu.claude import always_on
from quipu.prompt import locate
from quipu.commands._common import add_json, open_store
from quipu.model import CHILD_ENV
from quipu.output import print_json
from quipu.store import layers
from quipu.store.store import Store

SOURCES = ("startup", "resume", "clear", "compact", "fork")
MAX_EVENT_BYTES = 1_000_000


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "session-start",
        help="print the always-on layer a session starts with",
        description="Print the profile and the always-on rules, within the always-on budget "
        f"({always_on.BUDGET_TOKENS} tokens, estimated as characters / {always_on.CHARS_PER_TOKEN}). With --hook, "
        "read Claude Code's SessionStart event on stdin and print the hook's JSON answer.",
    )
    p.add_argument("--hook", action="store_true", help="run as Claude Code's SessionStart hook (event JSON on stdin)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.hook:
        return _hook(args)
    store = open_store(args)
    layer = always_on.build(store, user=layers.user_store(store), cwd=os.getcwd())
    if args.json:
        print_json(layer.to_json())
        return 0
    print(layer.text or "(nothing: the profile is empty and no memory is marked always-on)")
    print(f"\n{layer.tokens} of {layer.budget_tokens} tokens; {len(layer.left_out)} item(s) left out"
          + (" (see `quipu doctor`)" if layer.left_out else ""))
    return 0


def _log(message: str) -> None:
    try:
        directory = os.path.join(locate.quipu_home(), "logs")
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "hook.log"), "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} session-start {message}"[:2000].replace("\n", " ") + "\n")
    except OSError:
        pass


def _answer(args: argparse.Namespace) -> str:
    raw = sys.stdin.read(MAX_EVENT_BYTES + 1)
    if len(raw) > MAX_EVENT_BYTES:
        raise ValueError("event too large")
    event = json.loads(raw) if raw.strip() else {}
    if not isinstance(event, dict):
        raise ValueError("the event is not a JSON object")
    source = event.get("source", "startup")
    if source not in SOURCES:
        return ""
    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) and os.path.isdir(event["cwd"]) else None
    store = Store.find(getattr(args, "store", None), cwd=cwd)
    layer = always_on.build(store, user=layers.user_store(store), cwd=cwd or os.getcwd())
    if not layer.text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": layer.text}},
                      ensure_ascii=False)


def _hook(args: argparse.Namespace) -> int:
    if os.environ.get(CHILD_ENV) or not locate.switched_on(os.environ, locate.RECALL_SWITCH):
        return 0  # quipu's own model child, or a session started with QUIPU_RECALL=off
    try:
        out = _answer(args)
    except BaseException as exc:  # noqa: BLE001 - a session hook fails open
        _log(f"failed open: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return 0
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    return 0
