"""The store's skill folders: admitted drafts, refused drafts with their reasons, promotion events.

Layout, inside the memory store (no part of it is a ``.claude`` folder, and a store is never a
folder Claude Code loads skills from, so nothing here reaches anyone's context):
- ``skills/drafts/<name>/SKILL.md`` and ``draft.json`` (the candidate, its sessions, the failure,
  the model): admitted, inert, waiting for a person.
- ``skills/refused/<candidate>-<stamp>/refusal.json`` (and ``SKILL.md`` when the model wrote one):
  the review queue of what the gate refused, with every reason.
- ``skills/events/<name>/<stamp>-<action>.json``: each promotion and demotion, who and where.
Every write is one commit (``Quipu-Action: skill-draft | skill-refuse | skill-promote |
skill-demote``, ``Quipu-Skill: <name>``); files are only added, so ``quipu undo COMMIT`` reverts any,
and a candidate whose draft or refusal was reverted is not drafted again unless a person asks.
These folders are part of the store's schema (``quipu.store.schema``): they travel through
``quipu clone`` and ``quipu sync``, checked as untrusted input, and stay inert where they arrive.
"""
from __future__ import annotations

import datetime as _dt
import json
import secrets
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from quipu.store import effects
from quipu.store.store import Store

DRAFTS = "skills/drafts"
REFUSED = "skills/refused"
EVENTS = "skills/events"


def stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _dumps(data: Any) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


@dataclass(frozen=True)
class Entry:
    kind: str  # draft | refused
    name: str
    path: str  # the folder inside the store
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "path": self.path, **self.data}


def _folders(store: Store, base: str) -> list[str]:
    tree = store.head_tree()
    try:
        folder = tree[base]
    except KeyError:
        return []
    return sorted(e.name for e in store.repo[folder.id] if e.type_str == "tree")  # type: ignore[attr-defined]


def _json(store: Store, rel: str) -> dict[str, Any]:
    raw = store.read_bytes(rel)
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def entries(store: Store) -> list[Entry]:
    """Every draft and refusal in the store, with the last promotion event of each draft."""
    out = []
    for name in _folders(store, DRAFTS):
        data = _json(store, f"{DRAFTS}/{name}/draft.json")
        event = last_event(store, name)
        data["promoted"] = event.get("where") if event.get("action") == "promote" else None
        out.append(Entry("draft", name, f"{DRAFTS}/{name}", data))
    for folder in _folders(store, REFUSED):
        data = _json(store, f"{REFUSED}/{folder}/refusal.json")
        out.append(Entry("refused", str(data.get("name") or folder), f"{REFUSED}/{folder}", data))
    return out


def known_candidates(store: Store, again: Collection[str] = ()) -> set[str]:
    """Candidate ids already drafted or refused, or whose draft or refusal a person took back
    (``taken_back``): never sent to a model again, but those taken back that ``again`` names
    (``quipu skills draft --again``)."""
    present = {str(e.data.get("candidate")) for e in entries(store) if e.data.get("candidate")}
    return present | (taken_back(store) - set(again))


def taken_back(store: Store) -> set[str]:
    """Candidate ids of drafts and refusals a commit added and the store no longer holds: a person
    reverted them (``quipu undo``, a plain ``git revert``; nothing else removes one)."""
    written = [e for e in store.log() if e.action in ("skill-draft", "skill-refuse")]
    found = effects.taken_back(store.repo, store.head_tree(), written, _is_record)
    return {c for _path, data in found if isinstance(c := data.get("candidate"), str) and c}


def _is_record(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 4 and ("/".join(parts[:2]), parts[3]) in ((DRAFTS, "draft.json"), (REFUSED, "refusal.json"))


def draft_names(store: Store) -> list[str]:
    return _folders(store, DRAFTS)


def draft_text(store: Store, name: str) -> bytes | None:
    return store.read_bytes(f"{DRAFTS}/{name}/SKILL.md")


def last_event(store: Store, name: str) -> dict[str, Any]:
    names = _folders_files(store, f"{EVENTS}/{name}")
    return _json(store, f"{EVENTS}/{name}/{names[-1]}") if names else {}


def _folders_files(store: Store, base: str) -> list[str]:
    try:
        folder = store.head_tree()[base]
    except KeyError:
        return []
    return sorted(e.name for e in store.repo[folder.id] if e.type_str == "blob")  # type: ignore[attr-defined]


def _trailers(action: str, name: str, candidate: str | None) -> dict[str, str | None]:
    return {"Quipu-Action": action, "Quipu-Memory": f"skill/{name}", "Quipu-Skill": name,
            "Quipu-Candidate": candidate}


def write_draft(store: Store, name: str, skill_md: str, data: dict[str, Any]) -> str:
    base = f"{DRAFTS}/{name}"
    return store.commit({f"{base}/SKILL.md": skill_md.encode("utf-8"), f"{base}/draft.json": _dumps(data)},
                        f"quipu: draft skill {name} (inert until promoted)",
                        _trailers("skill-draft", name, data.get("candidate")), create_only=[f"{base}/SKILL.md"])


def write_refusal(store: Store, name: str, skill_md: str | None, data: dict[str, Any]) -> str:
    base = f"{REFUSED}/{data.get('candidate', 'none')}-{stamp()}"
    changes = {f"{base}/refusal.json": _dumps(data)}
    if skill_md is not None:
        changes[f"{base}/SKILL.md"] = skill_md.encode("utf-8")
    reasons = data.get("reasons") or ["refused"]
    return store.commit(changes, f"quipu: refuse skill draft {name or data.get('candidate')}: {reasons[0]}",
                        _trailers("skill-refuse", name or "none", data.get("candidate")))


def write_event(store: Store, name: str, action: str, data: dict[str, Any]) -> str:
    rel = f"{EVENTS}/{name}/{stamp()}-{action}.json"
    return store.commit({rel: _dumps({"action": action, **data})}, f"quipu: {action} skill {name}",
                        {**_trailers(f"skill-{action}", name, None), "Quipu-By": data.get("by")})
