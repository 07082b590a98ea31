"""One memory as `quipu show` and the MCP server report it: labels, links, history and its claims' last checks."""
from __future__ import annotations

import json
from typing import Any

from quipu.index import index
from quipu.store.store import Store
from quipu.verify.claims import last_results

HISTORY_LIMIT = 20


def details(store: Store, memory_id: str) -> dict[str, Any]:
    """Everything `quipu show` says about one memory, as JSON-ready values (raises NotFound)."""
    memory = store.get(memory_id)
    found = index.rows(
        store, "SELECT status, superseded_by, labels, label_details FROM memories WHERE id = ?", (memory.id,)
    )
    status, superseded_by, labels = memory.status, None, {}
    if found:
        status, superseded_by = found[0]["status"], found[0]["superseded_by"]
        labels = json.loads(found[0]["label_details"] or "{}")
    superseding = [r["id"] for r in index.rows(store, "SELECT id FROM memories WHERE superseded_by = ?", (memory.id,))]
    return {
        **memory.frontmatter(),
        "body": memory.body,
        "path": memory.path,
        "current_status": status,
        "superseded_by": superseded_by,
        "supersedes_now": superseding,
        "labels": labels,
        "history": [e.to_json() for e in store.log(memory=memory.id, limit=HISTORY_LIMIT)],
        "claims": [c.to_json() for c in last_results(store.cache_dir, memory.id)],
    }


def text_lines(d: dict[str, Any]) -> list[str]:
    """The human-readable form of ``details``."""
    lines = [f"{d['title']}  ({d['id']})"]
    if d.get("description"):
        lines.append(d["description"])
    facts = [f"class {d['class']}", f"origin {d['origin']}", f"created {d['created']}", f"status {d['current_status']}"]
    half = d["half_life_days"]
    half_text = "never decays" if half is None else f"half-life {half:g} days"
    lines.append("  " + ", ".join([*facts, half_text]))
    if d["superseded_by"]:
        lines.append(f"  superseded by {d['superseded_by']}")
    if d["supersedes_now"]:
        lines.append(f"  supersedes {', '.join(d['supersedes_now'])}")
    for label, detail in d["labels"].items():
        lines.append(f"  label: {label}" + (f" ({detail})" if detail else ""))
    for name in ("topics", "entities", "aliases"):
        if d.get(name):
            lines.append(f"  {name}: {', '.join(d[name])}")
    lines += ["", d["body"].rstrip()]
    if d["claims"]:
        lines += ["", "Claims:"]
        lines += [f"  {c['status']:<7} {c['probe']}  {c['detail']}  ({c['checked_at']})" for c in d["claims"]]
    if d["history"]:
        lines += ["", "History:"]
        lines += [f"  {e['commit'][:12]} {e['time']} {e['summary']}" for e in d["history"]]
    return lines
