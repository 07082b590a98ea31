"""`quipu list`: memories filtered by class, status, topic or label."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.commands._common import add_json, count, open_store
from quipu.store.memory import CLASSES, STATUSES
from quipu.output import print_json, table


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("list", help="list memories", description="List memories, newest first.")
    p.add_argument("--class", dest="cls", choices=list(CLASSES), help="only this class")
    p.add_argument("--status", choices=[*STATUSES, "retracted"], help="only this status")
    p.add_argument("--topic", help="only memories with this topic or entity")
    p.add_argument("--label", help="only memories carrying this label (e.g. unverified)")
    p.add_argument("--limit", type=count(), default=50, help="at most this many (default 50, 0 for all)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    where, params = [], []
    if args.cls:
        where.append("class = ?")
        params.append(args.cls)
    if args.status:
        where.append("status = ?")
        params.append(args.status)
    if args.topic:
        where.append("(' | ' || lower(tags) || ' | ') LIKE ?")
        params.append(f"% | {args.topic.lower()} | %")
    if args.label:
        where.append("(' ' || labels || ' ') LIKE ?")
        params.append(f"% {args.label} %")
    sql = "SELECT id, title, class, status, labels, created_ts FROM memories"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created_ts DESC, id"
    if args.limit:
        sql += f" LIMIT {int(args.limit)}"
    found = index.rows(store, sql, params)
    if args.json:
        print_json([{k: r[k] for k in ("id", "title", "class", "status")} | {"labels": r["labels"].split()} for r in found])
        return 0
    if not found:
        print("No memories match.")
        return 0
    print(table([(r["id"], r["class"], r["status"], r["labels"], r["title"][:60]) for r in found],
                ("id", "class", "status", "labels", "title")))
    return 0
