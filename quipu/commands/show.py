"""`quipu show ID`: a memory with its current labels, links and history."""
from __future__ import annotations

import argparse
import json

from quipu import index
from quipu.claims import last_results
from quipu.commands._common import add_json, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("show", help="show one memory", description="Show a memory, its labels, links and history.")
    p.add_argument("id", help="the memory's id")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    memory = store.get(args.id)
    found = index.rows(
        store, "SELECT status, superseded_by, labels, label_details FROM memories WHERE id = ?", (memory.id,)
    )
    status, superseded_by, labels = memory.status, None, {}
    if found:
        status, superseded_by = found[0]["status"], found[0]["superseded_by"]
        labels = json.loads(found[0]["label_details"] or "{}")
    superseding = [r["id"] for r in index.rows(store, "SELECT id FROM memories WHERE superseded_by = ?", (memory.id,))]
    history = store.log(memory=memory.id, limit=20)
    claims = last_results(store.cache_dir, memory.id)
    if args.json:
        print_json(
            {
                **memory.frontmatter(),
                "body": memory.body,
                "path": memory.path,
                "current_status": status,
                "superseded_by": superseded_by,
                "supersedes_now": superseding,
                "labels": labels,
                "history": [e.to_json() for e in history],
                "claims": [c.to_json() for c in claims],
            }
        )
        return 0
    print(f"{memory.title}  ({memory.id})")
    if memory.description:
        print(memory.description)
    facts = [f"class {memory.cls}", f"origin {memory.origin}", f"created {memory.created}", f"status {status}"]
    half = "never decays" if memory.half_life_days is None else f"half-life {memory.half_life_days:g} days"
    print("  " + ", ".join(facts + [half]))
    if superseded_by:
        print(f"  superseded by {superseded_by}")
    if superseding:
        print(f"  supersedes {', '.join(superseding)}")
    for label, detail in labels.items():
        print(f"  label: {label}" + (f" ({detail})" if detail else ""))
    for name in ("topics", "entities", "aliases"):
        values = getattr(memory, name)
        if values:
            print(f"  {name}: {', '.join(values)}")
    print()
    print(memory.body.rstrip())
    if claims:
        print()
        print("Claims:")
        for claim in claims:
            print(f"  {claim.status:<7} {claim.probe}  {claim.detail}  ({claim.checked_at})")
    if history:
        print()
        print("History:")
        for entry in history:
            print(f"  {entry.commit[:12]} {entry.time} {entry.summary}")
    return 0
