"""`quipu list`: memories filtered by class, status, topic, label or project."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.commands._common import add_json, count, open_stores, project_value
from quipu.store.memory import CLASSES, STATUSES
from quipu.output import print_json, table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from quipu.store.store import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("list", help="list memories", description="List memories, newest first. Inside a project "
                       "with its own store, the per-user store is listed too and each row names its store.")
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
    stores = open_stores(args)  # inside a project with its own store, the per-user store too
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
    found = []
    for store in stores:
        rows = index.rows(store, sql, params)
        if args.project is not None:
            rows = [r for r in rows if _of(r["project"], args.project, _own_store_of(store))]
        found += [(store.layer, r) for r in rows]
    found.sort(key=lambda item: (-(item[1]["created_ts"] or 0), item[1]["id"]))  # newest first, both stores
    found = found[: args.limit or None]
    if args.json:
        print_json([{k: r[k] for k in ("id", "title", "class", "status")} | {"labels": r["labels"].split(),
                    "project": r["project"]} | ({"store": layer} if layer else {}) for layer, r in found])
        return 0
    if not found:
        print("No memories match.")
        return 0
    layered = len(stores) > 1
    print(table([((layer,) if layered else ()) + (r["id"], r["class"], r["status"], r["labels"], r["title"][:60])
                 for layer, r in found], (("store",) if layered else ()) + ("id", "class", "status", "labels", "title")))
    return 0


NO_PROJECT = "none"


def _project_filter(value: str) -> str:
    """``--project``: a folder made absolute, a name, or '' for ``none``."""
    return "" if value == NO_PROJECT else (project_value(value) or "")


def _own_store_of(store: Store) -> str | None:
    """The project folder whose own store ``store`` is (a ``.quipu`` folder), else None."""
    from quipu.prompt import locate

    root = store.root.absolute()
    return str(root.parent) if root.name == locate.STORE_DIR_NAME else None


def _of(project: str | None, wanted: str, own: str | None = None) -> bool:
    """Whether a memory whose ``project`` field is ``project``, in the own store of the project
    folder ``own`` (if any), is of the project ``wanted`` (a folder, a name, or '': of no project)
    as the prompt hook reads it (``quipu.prompt.files``: every memory of a project's own store is
    that project's)."""
    from quipu.prompt import locate
    from quipu.prompt.files import of_this_project, placed

    if own is not None:
        if not wanted:
            return False
        return locate.inside(wanted, own) if wanted.startswith("/") else own.rstrip("/").rsplit("/", 1)[-1] == wanted
    if not wanted:
        return project is None or not placed(project)
    if wanted.startswith("/"):
        return of_this_project(project, wanted)
    return project == wanted or (project is not None and placed(project) and project.rstrip("/").rsplit("/", 1)[-1] == wanted)
