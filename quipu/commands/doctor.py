"""`quipu doctor`: the git repository's own health (a stale git lock too), schema errors, index freshness, hooks, size and
gc state; `quipu doctor --repair` mends what a crash or another tool left in the repository."""
from __future__ import annotations

import argparse

from quipu import doctor
from quipu.store import repair
from quipu.commands._common import add_json, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("doctor", help="check the store's health", description="Check the store and say how to fix what is wrong.")
    p.add_argument(
        "--memory-md", action="append", default=[], metavar="FILE",
        help="also measure this MEMORY.md against Claude Code's 200-line / 25,000-byte load limit (repeatable)",
    )
    p.add_argument("--repair", action="store_true",
                   help="mend what a crash or another tool left in the store's git repository (a stale "
                   "index.lock no process holds, an empty branch ref, damaged objects, a corrupt git index, a "
                   "write that did not finish), each in that order in one run; damaged files are moved aside, "
                   "never deleted; exit 0 once nothing is left to mend")
    add_json(p)
    p.set_defaults(func=run)


# What each kind of finding makes of the repository, in the order `--repair` mends them.
_SUMMARIES = {"lock": "a stale git lock blocks git", "ref": "damaged", "objects": "damaged", "index": "damaged",
              "write": "a write did not finish"}


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    steps = repair.repair(store.root) if args.repair else []
    repaired = [f"{'repaired' if step.done else 'not repaired'}: {step.detail}" for step in steps]
    found = repair.diagnose(store.root)
    findings = [f for f in found if f.kind not in repair.NOTES]
    notes = [f"note: {f.detail}" for f in found if f.kind in repair.NOTES]
    if findings:
        kinds = {f.kind for f in findings}
        summary = "; ".join(dict.fromkeys(what for kind, what in _SUMMARIES.items() if kind in kinds)) or "damaged"
        checks = [doctor.Check("git repository", False, f"{summary}; run `quipu doctor --repair`",
                               [f"{f.kind}: {f.detail}" for f in findings] + repaired + notes)]
    else:
        fixes = sum(step.done for step in steps)
        summary = "intact" + (f" after repair ({fixes} fix(es))" if fixes else "")
        checks = [doctor.Check("git repository", True, summary, repaired + notes)]
        checks += doctor.run_checks(store) + [doctor.check_memory_md(store, path) for path in args.memory_md]
    if args.json:
        print_json({"store": str(store.root), "ok": all(c.ok for c in checks), "checks": [c.to_json() for c in checks]})
    else:
        print(f"Store: {store.root} (chosen by {store.how})")
        for check in checks:
            print(f"[{'ok' if check.ok else '!!'}] {check.name}: {check.summary}")
            for line in check.details:
                print("     " + line.replace("\n", "\n       "))
    return 0 if all(c.ok for c in checks) else 1
