"""Helpers shared by the sub-commands: opening the store, common flags."""
from __future__ import annotations

import argparse

from quipu.store import Store


def open_store(args: argparse.Namespace) -> Store:
    return Store.find(getattr(args, "store", None))


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for machine readers")
