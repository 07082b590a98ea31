"""`quipu label ID LABEL`: set or clear a label on a memory (a commit of its own)."""
from __future__ import annotations

import argparse

import json

from quipu.index import index
from quipu.commands._common import add_json, as_recorded, open_store
from quipu.errors import FatalError
from quipu.output import print_json
from quipu.store.store import Store

# Not labels: states other commands decide, each with its own event and undo.
_STATES = {"superseded": "`quipu supersede OLD NEW` marks OLD as replaced by NEW",
           "active": "a memory is active unless superseded or retracted"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("label", help="set or clear a label", description="Set (or with --remove clear) a label such "
                       "as 'unverified'. Setting a label the memory has with the same detail, or clearing one it does "
                       "not have, writes nothing.")
    p.add_argument("id", help="the memory's id")
    p.add_argument("label", help="the label")
    p.add_argument("--remove", action="store_true", help="clear the label instead of setting it")
    p.add_argument("--detail", default="", help="a note shown beside the label")
    add_json(p)
    p.set_defaults(func=run)


def labelled(store: Store, label: str) -> dict[str, str]:
    """{memory id: the label's detail} of the memories that have ``label`` now (the index's fold of their events)."""
    rows = index.rows(store, "SELECT id, label_details FROM memories WHERE instr(' ' || labels || ' ', ?)",
                      (f" {label} ",))
    return {row["id"]: str(json.loads(row["label_details"] or "{}").get(label, "")) for row in rows}


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    word = args.label.casefold()
    if word in _STATES and not args.remove:
        raise FatalError(f"{args.label!r} is a state, not a label: {_STATES[word]}; nothing was written")
    if word == "retracted" and args.label != word:
        raise FatalError(f"{args.label!r} is not the label 'retracted' that takes a memory out of recall; nothing "
                         f"was written\n- run `quipu retract {args.id}`")
    has = labelled(store, args.label)
    detail = as_recorded(args.detail, "detail") if args.detail and not args.remove else args.detail
    if (args.id in has) if args.remove else has.get(args.id) != detail:
        sha = store.label(args.id, args.label, not args.remove, detail=detail)
    else:
        sha = None
    if sha is None:
        if not store.exists(args.id):
            raise store.missing(args.id)
        state = "does not have" if args.remove else "already has"
        if args.json:
            print_json({"commit": None, "id": args.id, "label": args.label, "set": not args.remove, "already": True})
        else:
            print(f"{args.id} {state} label {args.label}; nothing was written")
        return 0
    index.refresh_after_write(store)
    if args.json:
        print_json({"commit": sha, "id": args.id, "label": args.label, "set": not args.remove, "already": False})
    else:
        print(f"{'Cleared' if args.remove else 'Set'} label {args.label} on {args.id}  [commit {sha[:12]}]")
    return 0
