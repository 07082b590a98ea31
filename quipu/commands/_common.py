"""Helpers shared by the sub-commands: opening the store, common flags."""
from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from quipu.store.store import Store


def open_store(args: argparse.Namespace) -> Store:
    from quipu.store.store import Store  # imported when used: pygit2 costs a command that needs no store ~0.1 s

    return Store.find(getattr(args, "store", None))


def add_allow_secret(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-secret-like", action="append", default=[], metavar="RULE",
        help="commit text that the secret rule RULE (named in the refusal) flags, when you vouch it is no secret; "
        "recorded in the commit's Quipu-Allowed-Secret-Like trailer (repeatable)")


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for machine readers")
