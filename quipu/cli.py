"""The `quipu` command line: parses arguments and dispatches; nothing else.

Every sub-command lives in ``quipu/commands/<verb>.py`` with ``register(subparsers)`` and
``run(args) -> int``. ``main`` turns ``FatalError``, a full disk, a file system it may not write
(read-only, or another user's) and a path that cannot be used (a file where a folder goes) into one
message and exit 1, an argument that is not UTF-8 into
one message and exit 1, anything unexpected into one line and exit 3 with the traceback written
to ``$QUIPU_HOME/logs/crash.log`` (never to the terminal), and ^C into 130. A command that did
its work but left some inputs out returns ``EXIT_SOME_SKIPPED`` (4), after listing each with its
reason (``quipu import``). argparse's usage errors, and a ``UsageError``, exit 2. With ``--json``,
an error is also one JSON object on stdout, ``{"error": {"exit": N, "message": ..., "fix": [...]}}``,
so a script reading stdout learns why there is no answer.

``run`` is the program's entry (the ``quipu`` script, ``python -m quipu``): ``main``, then the
exit. When nothing waits for the interpreter's teardown (no ``atexit`` callback, no other
thread that is not a daemon) it flushes the standard streams and ends the process at once: the
teardown of every loaded module is a good part of a short command's cost, and a command has
closed every file it wrote before it returns. A command that reads or writes one memory
(``ONE_MEMORY``) runs without Python's cycle collector: its few reference cycles live until the
process ends a few milliseconds later anyway, and the collector's two dozen passes over every
object the imports made were about 2 ms of a ``quipu add``. Every other command collects as usual.
"""
from __future__ import annotations

from quipu.lite import import_light_stdlib

import_light_stdlib()  # argparse and pathlib without gettext, locale and urllib.parse (see quipu.lite)

import argparse  # noqa: E402
import errno  # noqa: E402
import importlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from quipu import __version__  # noqa: E402
from quipu.commands import COMMANDS, ONE_MEMORY, chosen_command  # noqa: E402
from quipu.errors import FatalError, UsageError  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: a command does not load typing
    from collections.abc import Sequence
    from typing import Any, NoReturn

def _module_name(command: str) -> str:
    return "import_" if command == "import" else command.replace("-", "_")


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it, without importing shutil
    (and the compression modules it loads) into every command."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        _USAGE_ERROR[:] = [f"{self.prog}: {message}"]  # for the JSON answer of a --json command
        super().error(message)


_USAGE_ERROR: list[str] = []


def _json_error(argv: Sequence[str], code: int, message: str) -> None:
    """The error as one JSON object on stdout, when the command was asked for ``--json``."""
    if "--json" not in argv:
        return
    import json

    lines = [line for line in message.splitlines() if line.strip()]
    fix = [line[2:] for line in lines[1:] if line.startswith("- ")]
    text = " ".join([lines[0] if lines else "", *(line for line in lines[1:] if not line.startswith("- "))]).strip()
    try:
        print(json.dumps({"error": {"exit": code, "message": text, "fix": fix}}, ensure_ascii=False), flush=True)
    except (OSError, ValueError):  # a closed stdout: the message went to stderr already
        pass


# Parsers a long-lived process built before it runs commands (the command server, ``quipu.warm``),
# by command: a parser holds nothing of the arguments it parses.
BUILT: dict[str | None, argparse.ArgumentParser] = {}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that sub-command's module is imported (a hook entry point
    such as ``session-end`` must not pay for importing every command)."""
    parser = _Parser(
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
        help="the one store to use (default: $QUIPU_STORE, the nearest .quipu store upwards, "
        "then the per-user store; inside a project, reads search the per-user store too); "
        "also accepted after the command",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
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


def set_collector(argv: Sequence[str]) -> None:
    """Python's cycle collector off for a command of ``ONE_MEMORY``, on for any other."""
    import gc

    if chosen_command(argv) in ONE_MEMORY:
        gc.disable()
    else:
        gc.enable()


def run() -> NoReturn:
    """The ``quipu`` program: ``main`` on ``sys.argv``, then the exit (see the module contract)."""
    set_collector(sys.argv[1:])
    code = main()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the process started with that descriptor closed
                stream.flush()
    except (OSError, ValueError):  # a closed pipe: the interpreter's own exit reports it as it always has
        raise SystemExit(code) from None
    if _nothing_waits():
        os._exit(code)
    raise SystemExit(code)


def _nothing_waits() -> bool:
    """No ``atexit`` callback and no live thread the interpreter would join on its way out."""
    import atexit

    pending = getattr(atexit, "_ncallbacks", None)
    if pending is None or pending():
        return False
    threading = sys.modules.get("threading")
    if threading is None:
        return True
    main_thread = threading.main_thread()
    return not any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate())


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
    try:
        _check_utf8(argv)
        if argv == ["--version"]:  # what argparse prints, without importing every command for the parser
            print(f"quipu {__version__}")
            return 0
        command = chosen_command(argv)
        parser = BUILT.get(command) or build_parser(command)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code == 2:
                _json_error(argv, 2, _USAGE_ERROR[0] if _USAGE_ERROR else "usage error")
            raise
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        return int(args.func(args) or 0)
    except FatalError as exc:
        code = 2 if isinstance(exc, UsageError) else 1
        print(f"quipu: error: {exc}", file=sys.stderr)
        _json_error(argv, code, str(exc))
        return code
    except KeyboardInterrupt:
        print("quipu: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the one place unexpected failures are reported
        if _is_disk_full(exc):
            message = (f"no space left on the device ({_first_line(exc)}); the command did not finish, and a write "
                       "that did not finish was not committed\n- free some space, then run the command again")
            print(f"quipu: error: {message}", file=sys.stderr)
            _json_error(argv, 1, message)
            return 1
        if _is_unwritable(exc):
            where = f" {exc.filename}" if isinstance(exc, OSError) and exc.filename else ""
            message = (f"cannot write{where} ({_first_line(exc)}); the command did not finish, and a write "
                       "that did not finish was not committed\n- a read-only disk must be mounted read-write, and a "
                       "folder another user owns needs its owner to let you write; then run the command again\n"
                       "- reading commands (search, show, list, log, doctor) work on a store you cannot write")
            print(f"quipu: error: {message}", file=sys.stderr)
            _json_error(argv, 1, message)
            return 1
        if _is_bad_path(exc):
            assert isinstance(exc, OSError)  # _is_bad_path says so; this tells the type checker
            message = (f"{exc.strerror}: {exc.filename}; the command did not finish\n- check that path: a part of "
                       "it is a file where a folder must be, or a folder quipu cannot make there")
            print(f"quipu: error: {message}", file=sys.stderr)
            _json_error(argv, 1, message)
            return 1
        code = _crashed(exc)
        _json_error(argv, code, f"unexpected error: {type(exc).__name__} (see the crash log named on stderr)")
        return code


def _crashed(exc: BaseException) -> int:
    """One line and the crash log's path; never a traceback on the terminal, whatever fails here."""
    try:
        from quipu import output

        path = output.crash_log(exc, sys.argv)
    except Exception:  # noqa: BLE001 - the crash path itself must not crash
        path = "(could not write a log)"
    try:
        first = str(exc).splitlines()[0] if str(exc) else ""
    except Exception:  # noqa: BLE001 - an exception whose str() fails
        first = ""
    try:
        print(f"quipu: unexpected error: {type(exc).__name__}: {first}\n- details were written to {path}",
              file=sys.stderr)
    except Exception:  # noqa: BLE001 - no terminal to tell
        pass
    return 3


def _check_utf8(argv: Sequence[str]) -> None:
    """Refuse an argument that is not UTF-8 (Python hands such bytes over as lone surrogates): no
    memory, query, path or id can hold it, and the store must never receive it."""
    for position, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            raw = arg.encode("utf-8", "surrogateescape")
            at = len(arg[:exc.start].encode("utf-8", "surrogateescape"))
            shown = raw.decode("utf-8", "backslashreplace")
            raise FatalError(f"argument {position} ('{shown}') is not valid UTF-8 (byte {at + 1} is 0x{raw[at]:02x})"
                             "\n- pass text, ids and paths as UTF-8") from None


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose str() fails
        return type(exc).__name__
    return (text.splitlines() or [type(exc).__name__])[0]


def _sqlite_code(exc: BaseException) -> int | None:
    """The primary SQLite result code of an ``sqlite3`` error (not imported here to ask)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if type(exc).__module__ == "sqlite3" and isinstance(code, int) else None


def _is_disk_full(exc: BaseException) -> bool:
    """ENOSPC or EDQUOT, from the OS, as libgit2 words it (its OSError carries no errno) or as
    SQLite reports it (SQLITE_FULL)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if _sqlite_code(exc) == 13:  # SQLITE_FULL: "database or disk is full"
        return True
    text = _first_line(exc).lower()
    return isinstance(exc, (OSError, RuntimeError)) and ("no space left on device" in text or "disk quota exceeded" in text)


def _is_bad_path(exc: BaseException) -> bool:
    """A path given or chosen that cannot be what it must: a file where a folder goes, a folder
    that cannot be made (``/proc/x``), a folder where a file goes."""
    return isinstance(exc, (NotADirectoryError, FileExistsError, IsADirectoryError, FileNotFoundError)) \
        and bool(exc.filename) and bool(exc.strerror)


def _is_unwritable(exc: BaseException) -> bool:
    """A read-only file system or a file this user may not write: EROFS, EACCES, EPERM from the OS,
    libgit2's words for them, or SQLite's SQLITE_READONLY."""
    if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return True
    if _sqlite_code(exc) == 8:  # SQLITE_READONLY: "attempt to write a readonly database"
        return True
    text = _first_line(exc).lower()
    return isinstance(exc, OSError) and exc.errno is None and ("read-only file system" in text or "permission denied" in text)


if __name__ == "__main__":
    run()
