"""`quipu list`: memories filtered by class, status, topic, label or project."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.commands._common import add_json, count, open_store, project_value
from quipu.store.memory import CLASSES, STATUSES
from quipu.output import print_json, table


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("list", help="list memories", description="List memories, newest first.")
    p.add_argument("--class", dest="cls", choices=list(CLASSES), help="only this class")
    p.add_argument("--status", choices=[*STATUSES, "retracted"], help="only this status")
    p.add_argument("--topic", help="only memories with this topic or entity")
    p.add_argument("--label", help="only memories carrying this label (e.g. unverified)")
    p.add_argument("--project", metavar="DIR|NAME|none", type=_project_filter,
                   help="only the memories the prompt hook takes as of this project: of a folder holding DIR ('.': "
                   "here), of the project named NAME, or of none ('none': no project, or a home folder)")
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
    sql = "SELECT id, title, class, status, labels, created_ts, project FROM memories"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created_ts DESC, id"
    if args.limit and args.project is None:
        sql += f" LIMIT {int(args.limit)}"
    found = index.rows(store, sql, params)
    if args.project is not None:
        found = [r for r in found if _of(r["project"], args.project)][: args.limit or None]
    if args.json:
        print_json([{k: r[k] for k in ("id", "title", "class", "status")} | {"labels": r["labels"].split(),
                                                                             "project": r["project"]} for r in found])
        return 0
    if not found:
        print("No memories match.")
        return 0
    print(table([(r["id"], r["class"], r["status"], r["labels"], r["title"][:60]) for r in found],
                ("id", "class", "status", "labels", "title")))
    return 0


NO_PROJECT = "none"


def _project_filter(value: str) -> str:
    """``--project``: a folder made absolute, a name, or '' for ``none``."""
    return "" if value == NO_PROJECT else (project_value(value) or "")


def _of(project: str | None, wanted: str) -> bool:
    """Whether a memory whose ``project`` field is ``project`` is of the project ``wanted`` (a
    folder, a name, or '': of no project) as the prompt hook reads it (``quipu.prompt.files``)."""
    from quipu.prompt.files import of_this_project, placed

    if not wanted:
        return project is None or not placed(project)
    if wanted.startswith("/"):
        return of_this_project(project, wanted)
    return project == wanted or (project is not None and placed(project) and project.rstrip("/").rsplit("/", 1)[-1] == wanted)
