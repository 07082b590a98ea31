"""`quipu fact set|show`: facts that update themselves, one note per subject."""
from __future__ import annotations

import argparse

from quipu.capture import facts
from quipu.index import index
from quipu.commands._common import add_json, open_store
from quipu.errors import InvalidMemory
from quipu.store.memory import ORIGINS
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "fact",
        help="set or show a fact that updates itself",
        description="A fact note keeps one subject's current value on top, with the day it began, and every "
        "earlier value below with its dates. Each change is a commit.",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = verbs.add_parser("set", help="record a subject's new value",
                         description="Record VALUE as SUBJECT's value from --since (default today); the old value "
                         "moves into the note's history. Setting the value it already has changes nothing; setting "
                         "an earlier value again makes it current again.")
    s.add_argument("subject", help='what the fact is about, e.g. "Maria\'s employer"')
    s.add_argument("value", help="its value from now on")
    s.add_argument("--since", metavar="DATE", type=_since,
                   help="the day the value began (YYYY-MM-DD, not after today; default today)")
    s.add_argument("--origin", default="user", choices=list(ORIGINS), help="who said it (default: user)")
    s.add_argument("--session", help="the Claude Code session it came from")
    add_json(s)
    s.set_defaults(func=run_set)
    g = verbs.add_parser("show", help="show a subject's current and earlier values",
                         description="Show a fact note: the current value first, then earlier values with dates.")
    g.add_argument("subject", help="what the fact is about")
    add_json(g)
    g.set_defaults(func=run_show)


def _since(text: str) -> str:
    """``--since``: a date that has come; anything else is a usage error."""
    try:
        return facts.check_since(text)
    except InvalidMemory as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_since.__name__ = "date"


def run_set(args: argparse.Namespace) -> int:
    store = open_store(args)
    change = facts.set_fact(store, args.subject, args.value, since=args.since, origin=args.origin,
                            session=args.session)
    index.refresh_after_write(store)
    if args.json:
        print_json(change.to_json())
    elif change.commit is None:
        held = change.already or change.current
        if held == change.current:
            print(f"{change.subject}: already {held.value} (since {held.since}); nothing changed")
        else:
            print(f"{change.subject}: {held.value} already held from {held.since}; nothing changed\n"
                  f"  current: {change.current.value} (since {change.current.since})")
    else:
        print(f"{change.subject}: {change.current.value} (since {change.current.since})  "
              f"[{change.id}, commit {change.commit[:12]}]")
        for older in change.earlier[:3]:
            print(f"  before: {older.value} (from {older.since})")
        for ahead in [v for v in change.earlier if v.since > change.current.since]:
            print(f"  note: {ahead.value} was dated {ahead.since}, after today; "
                  f"{change.current.value} is current from {change.current.since}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    memory, history = facts.get_fact(store, args.subject)
    if args.json:
        print_json({"id": memory.id, "subject": args.subject,
                    "values": [{"value": v.value, "since": v.since} for v in reversed(history)]})
    else:
        print(f"{memory.title}  [{memory.id}]")
        print(memory.body.rstrip())
    return 0
