"""`quipu session-end`: the SessionEnd hook entry point; hands the per-session work to a detached child.

With ``--hook`` it reads the Claude Code event on stdin, starts ``quipu session-end --worker``
in a new session (stdio on /dev/null) and returns at once, well inside the 1.5 s SessionEnd budget.
It also starts ``quipu history append --worker`` for the session's transcript (the archive of past
turns under ``$QUIPU_HOME/history``), whether or not the session has a store, when the transcript
is a regular file (not a symbolic link, a named pipe or a device: the worker reads nothing else).
In a session started with ``QUIPU_CAPTURE=off`` it starts no per-session work (the history
append still runs unless ``QUIPU_HISTORY=off``).
It does nothing inside quipu's own model children (``QUIPU_CHILD``) and exits 0 whatever fails,
logging to ``$QUIPU_HOME/logs/session-hook.log``. Without ``--hook`` it does the work in the
foreground (``--worker`` is that, run by the hook: errors are logged, the exit code is always 0).
``quipu pre-compact`` is the same for the PreCompact event.
"""
from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from pathlib import Path

from quipu.prompt import locate
from quipu.commands._common import add_json, open_store
from quipu.commands.sweep import add_model_options, make_budget, make_model, print_report, project_root
from quipu.model import CHILD_ENV
from quipu.output import print_json
from quipu.store.store import Store, is_store
from quipu.curate.sweep import (
    SESSION_LOCK_WAIT,
    SESSION_MAX_CALLS,
    SESSION_MAX_CHARS,
    SessionEvent,
    child_env,
    per_session_work,
    quipu_argv,
    spawn_detached,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_STDIN = 1_000_000
LOG_NAME = "session-hook.log"
LOG_MAX_BYTES = 1_000_000


def log(command: str, message: str) -> None:
    """One line in $QUIPU_HOME/logs/session-hook.log; never raises."""
    try:
        folder = Path(locate.quipu_home()) / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOG_NAME
        mode = "w" if path.exists() and path.stat().st_size > LOG_MAX_BYTES else "a"
        with path.open(mode, encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {command} {message}"[:2000].replace("\n", " ") + "\n")
    except Exception:  # noqa: BLE001 - logging must never break a hook
        pass


def register_hook_command(sub: argparse._SubParsersAction, name: str, event: str, help_text: str,  # type: ignore[type-arg]
                          description: str) -> None:
    p = sub.add_parser(name, help=help_text, description=description)
    p.add_argument("--hook", action="store_true",
                   help=f"read the Claude Code {event} event JSON on stdin, start the work detached, return at once")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--session", metavar="ID", help="the session whose memories to check")
    p.add_argument("--transcript", metavar="PATH", help="the session's transcript (JSONL)")
    p.add_argument("--cwd", metavar="PATH", help="the session's working folder (recorded with the work)")
    p.add_argument("--reason", default="", help=argparse.SUPPRESS)
    p.add_argument("--sync", action="store_true",
                   help="after the work, run `quipu sync` with the store's remote (off unless given)")
    add_model_options(p, calls=SESSION_MAX_CALLS, chars=SESSION_MAX_CHARS, store_project_default=True)
    add_json(p)
    p.set_defaults(func=lambda args: run_hook_command(args, name, event))


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    register_hook_command(
        sub, "session-end", "SessionEnd",
        help_text="the SessionEnd hook: per-session curator work, detached",
        description="Entry point for Claude Code's SessionEnd hook (`quipu session-end --hook`). It returns "
        "at once and leaves the bounded per-session work (a small curator sweep over the session's memories, "
        "or the newest ones) to a detached process that holds the sweep lock. Does nothing inside quipu's own "
        "model children (QUIPU_CHILD) and never fails the hook. Without --hook the work runs in the foreground.",
    )


def _forwarded(args: argparse.Namespace) -> list[str]:
    out = []
    for flag, value in (("--model", args.model), ("--max-calls", args.max_calls), ("--max-chars", args.max_chars),
                        ("--project-root", args.project_root)):
        if value is not None:
            out += [flag, str(value)]
    return out + (["--sync"] if args.sync else [])


def _hook(args: argparse.Namespace, name: str, event_name: str) -> int:
    raw = sys.stdin.buffer.read(MAX_STDIN + 1)
    if len(raw) > MAX_STDIN:
        log(name, "event larger than 1 MB ignored")
        return 0
    event = SessionEvent.create(raw, event_name)
    if event is None:
        log(name, "stdin is not a hook event (JSON object); nothing done")
        return 0
    _start_history(name, event)
    if not locate.switched_on(os.environ, locate.CAPTURE_SWITCH):
        log(name, f"{locate.CAPTURE_SWITCH} is off: nothing of session {event.session_id or '-'} is captured")
        return 0
    root, _how = locate.find_store_root(getattr(args, "store", None), event.cwd or None)
    if not is_store(root):
        return 0  # no store for this session: nothing to do
    argv = quipu_argv("--store", root, name, "--worker", "--session", event.session_id,
                      "--transcript", event.transcript_path, "--cwd", event.cwd, "--reason", event.reason,
                      *_forwarded(args))
    pid = spawn_detached(argv, child_env())
    log(name, f"started the per-session work (pid {pid}) for session {event.session_id or '-'} in {root}")
    return 0


def _start_history(name: str, event: SessionEvent) -> None:
    """Archive the session's turns (``quipu history append``), detached, whether or not a store exists."""
    from quipu.commands.history import is_enabled

    if not event.transcript_path or not is_enabled():
        return
    try:  # the worker reads only a regular file; a named pipe or a missing path is not worth a process
        mode = os.lstat(event.transcript_path).st_mode
    except OSError as exc:
        log(name, f"no history append for session {event.session_id or '-'}: the transcript cannot be read "
                  f"({exc.strerror or exc})")
        return
    if not stat.S_ISREG(mode):
        log(name, f"no history append for session {event.session_id or '-'}: the transcript is not a regular file")
        return
    argv = quipu_argv("history", "append", "--worker", "--transcript", event.transcript_path,
                      *(("--session", event.session_id) if event.session_id else ()))
    pid = spawn_detached(argv, child_env())
    log(name, f"started the history append (pid {pid}) for session {event.session_id or '-'}")


def offline_line(spec: str | None, store: Store) -> str:
    """Whether capture's model could run, on one line (the log's reader finds why nothing was captured)."""
    from quipu.commands.sweep import model_spec, use_api_key
    from quipu.model import offline_status

    ok, why = offline_status(model_spec(spec, store), use_api_key=use_api_key())
    return f"capture {'can run' if ok else 'CANNOT run'}: " + why.replace("\n- ", "; fix: ", 1).replace("\n- ", "; or ")


def capture_line(done: dict[str, Any] | None) -> str:
    """What capture did for the session, on one line: the log's reader learns why nothing was
    captured (the model's error) without opening the store's capture log."""
    if not done:
        return "capture: not run"
    if "not_run" in done:
        return f"capture: not run ({done['not_run']})"
    if done.get("error"):
        return f"capture FAILED: {' '.join(str(done['error']).split())[:300]} (the store's .cache/capture.log has more)"
    return (f"capture: {len(done['captured'])} captured, {len(done['facts'])} fact(s), {len(done['refused'])} "
            f"refused, {len(done['skipped'])} skipped of {done['candidates']} candidate(s)")


def _work(args: argparse.Namespace, event_name: str, *, wait: float) -> int:
    store = open_store(args)
    event = SessionEvent(event_name, args.session or "", args.transcript or "", args.cwd or "", args.reason or "")
    model = make_model(args.model, store)
    budget = make_budget(args, store, SESSION_MAX_CALLS, SESSION_MAX_CHARS)
    report = per_session_work(store, event, model=model, budget=budget, project_root=project_root(args, store),
                              lock_wait=wait)
    if args.worker:
        log(event_name, f"sweep {report.sweep_id} done: {len(report.applied)} applied, {len(report.queued)} queued, "
                        f"{len(report.findings)} findings, {len(report.skipped)} skipped"
                        + (f"; stopped: {report.stopped}" if report.stopped else "")
                        + f"; {capture_line(report.capture)}; {offline_line(args.model, store)}")
    elif args.json:
        print_json(report.to_json())
    else:
        print(capture_line(report.capture))
        print_report(report)
    if args.sync:
        _sync(store, event_name, quiet=args.worker)
    return 0


def _sync(store: Store, event_name: str, *, quiet: bool) -> None:
    from quipu.sync import sync  # only when asked: a hook must not pay for it otherwise

    result = sync.sync(store)
    by = sorted({r.commit[:12] for r in result.refused if r.commit})
    log(event_name, f"sync with {result.remote}: {len(result.incoming)} commit(s) came in, "
                    f"{len(result.refused)} file(s) refused" + (f" (from commit {', '.join(by)})" if by else "")
                    + f", pushed: {result.pushed}")
    if not quiet:
        from quipu.commands.sync import print_result

        print_result(result)


def run_hook_command(args: argparse.Namespace, name: str, event_name: str) -> int:
    if os.environ.get(CHILD_ENV):
        return 0  # inside quipu's own model child: the recursion guard
    if args.hook:
        try:
            return _hook(args, name, event_name)
        except BaseException as exc:  # noqa: BLE001 - a hook fails open
            log(name, f"{type(exc).__name__}: {exc}")
            return 0
    if args.worker:
        try:
            return _work(args, event_name, wait=SESSION_LOCK_WAIT)
        except BaseException as exc:  # noqa: BLE001 - nobody reads a detached child's exit code
            log(name, f"worker failed: {type(exc).__name__}: {exc}")
            return 0
    return _work(args, event_name, wait=0.0)
