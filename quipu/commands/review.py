"""`quipu review [accept|reject ID]`: the curator's queue of tensions, both memories side by side."""
from __future__ import annotations

import argparse
import itertools
import shutil
import textwrap
from typing import Any

from quipu.index import index
from quipu.curate import review
from quipu.commands._common import add_json, open_store
from quipu.errors import FatalError, NotFound
from quipu.store.memory import Memory
from quipu.output import print_json
from quipu.store.store import Store

BODY_LINES = 12


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "review",
        help="list and resolve what the curator queued",
        description="Without arguments, list the open review items: tensions the model saw that the guards "
        "kept from being applied, duplicates and dead paths, each with both memories side by side. "
        "`quipu review accept ID` applies it (a tension or duplicate: the loser is superseded by the "
        "winner; a dead path: the label stays), `quipu review reject ID` closes it (a finding's label is "
        "removed). Each resolution is one commit that `quipu undo` reverts.",
    )
    p.add_argument("action", nargs="?", default="list", choices=("list", "accept", "reject"),
                   help="list (default), accept or reject")
    p.add_argument("id", nargs="?", help="the review item's id (rv-...), or a unique prefix of it")
    p.add_argument("--all", action="store_true", help="list resolved items too")
    p.add_argument("--reason", default="", help="why (kept in the resolution's event)")
    add_json(p)
    p.set_defaults(func=run)


def _memory(store: Store, memory_id: str | None) -> Memory | None:
    if not memory_id:
        return None
    try:
        return store.get(memory_id)
    except NotFound:
        return None


def _memory_json(memory: Memory | None, state: dict[str, Any]) -> dict[str, Any] | None:
    if memory is None:
        return None
    return {**memory.frontmatter(), "body": memory.body, **state.get(memory.id, {})}


def _column(memory: Memory | None, role: str, state: dict[str, Any], width: int) -> list[list[str]]:
    """A memory as sections of lines (head, facts, topics, entities, body) for side-by-side display."""
    if memory is None:
        return [[f"{role}: (not in the store)"]]
    now = state.get(memory.id, {})
    facts = [f"{memory.cls}, created {memory.created[:10]}"]
    status = now.get("current_status", memory.status)
    labels = " ".join(now.get("labels", []))
    if status != "active" or labels:
        facts.append(f"{status}{' · ' + labels if labels else ''}")
    body: list[str] = []
    for paragraph in memory.body.strip().splitlines():
        body += textwrap.wrap(paragraph, width) or [""]
    if len(body) > BODY_LINES:
        body = body[: BODY_LINES - 1] + ["[...]"]
    sections = [
        [f"{role}: {memory.id}", *(textwrap.wrap(memory.title, width) or [""])],
        facts,
        textwrap.wrap("topics: " + ", ".join(memory.topics), width) if memory.topics else [],
        textwrap.wrap("entities: " + ", ".join(memory.entities), width) if memory.entities else [],
        ["-" * min(width, 20)],
        body,
    ]
    return [[line[:width] for line in section] for section in sections]


def _side_by_side(left: list[list[str]], right: list[list[str]], width: int) -> str:
    """Two columns, each section starting on the same row on both sides."""
    empty: list[str] = []
    rows: list[tuple[str, str]] = []
    for one, other in itertools.zip_longest(left, right, fillvalue=empty):
        rows += itertools.zip_longest(one, other, fillvalue="")
    return "\n".join(f"  {a.ljust(width)} | {b}".rstrip() for a, b in rows)


def _describe(item: review.ReviewItem) -> str:
    e = item.event
    if item.kind == "tension":
        failed = [name for name, g in (e.get("guards") or {}).items() if isinstance(g, dict) and not g.get("passed")]
        text = f"{e.get('verdict')} (confidence {float(e.get('confidence', 0)):.2f})"
        if failed:
            text += f"; guards failed: {', '.join(failed)}"
        if e.get("reason"):
            text += f"\n  reason: {e['reason']}"
        return text
    return str(e.get("detail", item.kind))


def _state(store: Store, ids: set[str]) -> dict[str, Any]:
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    found = index.rows(store, f"SELECT id, status, superseded_by, labels FROM memories WHERE id IN ({marks})", sorted(ids))
    return {r["id"]: {"current_status": r["status"], "superseded_by": r["superseded_by"],
                      "labels": r["labels"].split()} for r in found}


def _list(store: Store, args: argparse.Namespace) -> int:
    queue = review.items(store, include_closed=args.all)
    state = _state(store, {i.memory for i in queue} | {i.other for i in queue if i.other})
    if args.json:
        print_json([{**item.to_json(), "memory_record": _memory_json(_memory(store, item.memory), state),
                     "other_record": _memory_json(_memory(store, item.other), state)} for item in queue])
        return 0
    if not queue:
        print("Nothing to review.")
        return 0
    width = max(30, (shutil.get_terminal_size((100, 24)).columns - 5) // 2)
    for item in queue:
        status = "" if item.is_open else f" [{item.resolution}ed]"
        print(f"{item.review_id}  {item.kind}{status}: {_describe(item)}")
        if item.kind in ("tension", "proposal"):
            left = _column(_memory(store, item.memory), "loser", state, width)
            right = _column(_memory(store, item.other), "winner", state, width)
        else:
            left = _column(_memory(store, item.memory), "flagged", state, width)
            right = _column(_memory(store, item.other), "original", state, width) if item.other else []
        print(_side_by_side(left, right, width))
        if item.is_open:
            print(f"  accept: quipu review accept {item.review_id}    reject: quipu review reject {item.review_id}")
        print()
    open_count = sum(i.is_open for i in queue)
    print(f"{open_count} open item{'s' if open_count != 1 else ''}.")
    return 0


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.action == "list":
        if args.id:
            raise FatalError("`quipu review` lists; to resolve an item use `quipu review accept ID` or `reject ID`")
        return _list(store, args)
    if not args.id:
        raise FatalError(f"`quipu review {args.action}` needs the item's id\n- run `quipu review` to see the ids")
    item = review.find(store, args.id)
    resolve = review.accept if args.action == "accept" else review.reject
    sha = resolve(store, item.review_id, reason=args.reason)
    index.refresh_after_write(store)
    if args.json:
        print_json({"review": item.review_id, "resolution": args.action, "commit": sha,
                    "memory": item.memory, "other": item.other})
        return 0
    what = (f"{item.memory} is now superseded by {item.other}"
            if args.action == "accept" and item.kind != "dead-path" and item.other else f"{item.review_id} closed")
    print(f"{args.action.capitalize()}ed {item.review_id}: {what}  [commit {sha[:12]}; undo with `quipu undo {sha[:12]}`]")
    return 0
