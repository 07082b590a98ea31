"""Helpers shared by the sub-commands: opening the store, common flags."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from quipu.store.store import Store


def open_store(args: argparse.Namespace) -> Store:
    from quipu.store.store import Store  # imported when used: pygit2 costs a command that needs no store ~0.1 s

    return Store.find(getattr(args, "store", None))


def open_stores(args: argparse.Namespace) -> list[Store]:
    """The stores a read searches together, project first (``quipu.store.layers``); writes use
    ``open_store``."""
    from quipu.store import layers

    return layers.find(getattr(args, "store", None))


def add_allow_secret(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-secret-like", action="append", default=[], metavar="RULE",
        help="commit text that the secret rule RULE (named in the refusal) flags, when you vouch it is no secret; "
        "recorded in the commit's Quipu-Allowed-Secret-Like trailer (repeatable)")


def add_project(parser: argparse.ArgumentParser, what: str) -> None:
    """``--project DIR|NAME``: the project ``what`` is about (``project_value``)."""
    parser.add_argument("--project", metavar="DIR|NAME", type=project_value, help=(
        f"the project {what} about: its folder (a path, made absolute: '.', '~/src/app') or its name ('app': "
        "any folder of that name); the prompt hook then counts a file it names as evidence only in that project"))


def project_value(value: str) -> str | None:
    """``--project``: a folder as an absolute path (a value with a slash, ``.``, ``..`` or ``~``), else a name.
    The path is the folder's own, links resolved: the working folder Claude Code and Codex report
    (and capture records) is the one the system gives, never a path through a link."""
    import os

    from quipu.errors import InvalidMemory
    from quipu.store.memory import check_project

    if value in (".", "..") or value.startswith("~") or "/" in value or os.sep in value:
        value = os.path.realpath(os.path.expanduser(value))
    try:
        return check_project(value, "--project")
    except InvalidMemory as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--project: ")) from None


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for machine readers")


MAX_COUNT = 1_000_000_000  # far above any store or archive, well inside SQLite's 64-bit integers


def count(minimum: int = 0, maximum: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number from ``minimum`` to ``maximum``: anything else (a
    fraction, ``1e30``, a number past the bound) is a usage error naming the range."""

    def parse(text: str) -> int:
        digits = text.strip()
        if digits[:1] in "+-":
            digits = digits[1:]
        if not digits.isascii() or not digits.isdigit() or len(digits) > 12:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {minimum:,} to {maximum:,}")
        value = int(text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {minimum:,} to {maximum:,}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its own messages
    return parse


def amount(minimum: float, maximum: float, *, above: bool = True) -> Callable[[str], float]:
    """An argparse ``type`` for a finite number above (or, with ``above=False``, at least)
    ``minimum`` and at most ``maximum``: never ``nan``, ``inf`` or ``1e400``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low_ok = value > minimum if above else value >= minimum
        if not (math.isfinite(value) and low_ok and value <= maximum):
            side = "above" if above else "from"
            raise argparse.ArgumentTypeError(f"{text!r} is not a number {side} {minimum:g} and at most {maximum:,g}")
        return value

    parse.__name__ = "number"
    return parse


def named(text: str) -> str:
    """An argparse ``type`` for an id, a commit or a sweep: never empty (an unset shell variable
    names nothing, and must never read as "no filter" or "the commits of no sweep")."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value names nothing")
    return text


def as_recorded(text: str, what: str) -> str:
    """``text`` as a decision's event records it: with each secret-looking span redacted (a reason
    or a detail is redacted, not refused). Says so on stderr when it redacted anything."""
    from quipu.store.secrets_scan import redact

    kept = redact(text)
    if kept != text:
        import sys

        print(f"quipu: note: the {what} looked like it held a secret; it is recorded with that part redacted",
              file=sys.stderr)
    return kept
