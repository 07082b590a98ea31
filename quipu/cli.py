"""The `quipu` command line: parses arguments and dispatches; nothing else.

Every sub-command lives in ``quipu/commands/<verb>.py`` with ``register(subparsers)`` and
``run(args) -> int``. ``main`` turns ``FatalError`` and a full disk into one message and exit 1,
anything unexpected into exit 3 with the traceback written to a log file, and ^C into 130. A
command that did its work but left some inputs out returns ``EXIT_SOME_SKIPPED`` (4), after
listing each with its reason (``quipu import``). argparse's usage errors exit 2.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import sys
from collections.abc import Sequence

from quipu import __version__
from quipu.errors import FatalError

# Sub-command modules, in the order `quipu --help` lists them.
COMMANDS = (
    "init",
    "clone",
    "add",
    "show",
    "list",
    "search",
    "history",
    "skills",
    "recall",
    "supersede",
    "label",
    "log",
    "undo",
    "sync",
    "index",
    "doctor",
    "hooks",
    "hook",
    "install",
    "uninstall",
    "import",
    "sweep",
    "review",
    "session-end",
    "pre-compact",
    "verify",
    "capture",
    "fact",
    "profile",
    "session-start",
    "mcp",
)


def _module_name(command: str) -> str:
    return "import_" if command == "import" else command.replace("-", "_")


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv`` (skipping the global options), if any."""
    args = list(argv)
    while args:
        head = args.pop(0)
        if head == "--store":
            if args:
                args.pop(0)
            continue
        if head.startswith("--store="):
            continue
        return head if head in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that sub-command's module is imported (a hook entry point
    such as ``session-end`` must not pay for importing every command)."""
    parser = argparse.ArgumentParser(
        prog="quipu",
        description="A git-native memory for Claude Code: memories are markdown files in git, "
        "every change is a commit, recall runs on every prompt without a model.",
        epilog="Exit codes: 0 done; 1 an error (the message says how to fix it); 2 a usage error; 3 an "
        "unexpected failure (a log file is named); 4 done, but some inputs were skipped, each listed "
        "(`quipu import`); 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"quipu {__version__}")
    parser.add_argument(
        "--store",
        metavar="PATH",
        help="the store to use (default: $QUIPU_STORE, the nearest .quipu folder upwards, "
        "then the per-user store); also accepted after the command",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only else COMMANDS:
        importlib.import_module(f"quipu.commands.{_module_name(name)}").register(sub)
    _global_flags_after_command(sub)
    return parser


def _global_flags_after_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``quipu list --store X`` means ``quipu --store X list``: every sub-command (nested ones too)
    takes ``--store`` as well; given in both places, the later one wins."""
    for parser in set(sub.choices.values()):
        if not any("--store" in action.option_strings for action in parser._actions):
            parser.add_argument("--store", metavar="PATH", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _global_flags_after_command(action)


def check_dependencies(*, load: bool = True) -> None:
    """Import what every write to a store needs, which the commands load only at their first use
    (ImportError when it is missing): a launcher asks before it runs a command in-process. With
    ``load=False`` it is only looked for, not imported (a server that must start light)."""
    if load:
        import pygit2  # noqa: F401

        return
    import importlib.util

    try:
        found = importlib.util.find_spec("pygit2")
    except ValueError:  # present in sys.modules as None: an import of it fails
        found = None
    if found is None:
        raise ImportError("No module named 'pygit2' (the git library quipu writes with)")


def main(argv: Sequence[str] | None = None) -> int:
    from quipu.output import CleanWriter

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CleanWriter(sys.stdout), CleanWriter(sys.stderr)  # stored text is not a terminal command
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_chosen_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except FatalError as exc:
        print(f"quipu: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("quipu: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if not _is_disk_full(exc):
            return _crashed(exc)
        print(f"quipu: error: no space left on the device ({exc}); the command did not finish, and a write "
              "that did not finish was not committed\n- free some space, then run the command again",
              file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - the one place unexpected failures are reported
        return _crashed(exc)


def _crashed(exc: BaseException) -> int:
    from quipu import output

    path = output.crash_log(exc, sys.argv)
    print(f"quipu: unexpected error: {type(exc).__name__}: {exc}\n- details were written to {path}", file=sys.stderr)
    return 3


def _is_disk_full(exc: OSError) -> bool:
    """ENOSPC or EDQUOT, from the OS or as libgit2 words it (its OSError carries no errno)."""
    return exc.errno in (errno.ENOSPC, errno.EDQUOT) or "no space left on device" in str(exc).lower() \
        or "disk quota exceeded" in str(exc).lower()


if __name__ == "__main__":
    raise SystemExit(main())
