"""The MCP tools that write: ``remember`` and ``propose_supersession`` (``quipu.mcp.tools`` lists them).

Contract:
- ``remember`` writes to the store the server found (a project's, inside a project with one),
  through every capture gate (``quipu.mcp.tools`` says how); a memory near-identical to one of
  either store read (the per-user store's too, in such a project) is not written again, nor one
  near-identical to a memory a person retracted (the answer says it is out of recall on purpose).
- ``propose_supersession`` queues its review item in the store that holds both memories: the
  project's or, inside a project with its own store, the per-user one, whose memories
  ``search_memory`` shows beside the project's (``Service.layers``). Two memories of different
  stores cannot supersede one another: the answer says which store holds each, and nothing is
  queued.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from quipu.mcp.answers import Answer

if TYPE_CHECKING:
    from quipu.mcp.tools import Service


def remember(service: Service, args: dict[str, Any]) -> Answer:
    from quipu.capture import gates
    from quipu.index import index, near
    from quipu.prompt import locate
    from quipu.store.memory import Memory, new_id, now_utc

    title, body, cls = " ".join(args["title"].split()), args["body"].strip(), args["class"]
    topics = tuple(dict.fromkeys(" ".join(t.split()) for t in args.get("topics", []) if t.strip()))
    candidate = gates.Candidate(cls=cls, title=title, statement=body, outcome="held", kind="durable",
                                topics=topics, said_by="assistant")
    refusal = gates.check(candidate)
    if refusal is not None:
        detail = "it looks like a secret (a key, token or password)" if refusal.gate == "secret" else refusal.detail
        return Answer(
            f"remember: refused by the {refusal.gate} gate: {detail}. Nothing was committed.\n"
            "- state one durable claim declaratively (\"The team prefers X\", not \"always do X\"), "
            "without secrets, transient errors or one-off events", True)
    store = service.store
    layers = service.layers()  # the per-user store's memories are recalled here too
    found = near.near_duplicate_in([layer.store for _label, layer in layers], title, body, retracted=True)
    if found is not None:
        label, same = next(label for label, layer in layers if layer.store is found[0]), found[1]
        where = f" in the {label} store" if label else ""
        if same.status == "retracted":
            return Answer(f"remember: the user retracted a near-identical memory{where} ({same.id}: {same.title}): "
                          "it is out of recall on purpose. Nothing was committed.\n- do not remember it again; a "
                          f"person may bring it back with `quipu undo --memory {same.id}`", True)
        return Answer(f"remember: a near-identical memory exists{where} ({same.id}: {same.title}). Nothing was "
                      f"committed.\n- it is already remembered; to change it, call propose_supersession with "
                      f"{same.id}", True)
    memory = Memory.create(
        {"id": new_id(), "title": title, "description": "", "class": cls, "topics": list(topics),
         "origin": "assistant", "created": now_utc(), "session": service.conversation or service.session,
         "project": locate.project_field(str(store.root.absolute()), os.getcwd()) if cls == "project-note" else None},
        body + "\n", source="remembered memory")
    sha = store.add(memory, action="remember", session=service.session)
    index.ensure_fresh(store)
    return Answer(f"Remembered {memory.id} ({cls}): {title} [commit {sha[:12]}; "
                  f"`quipu retract {memory.id}` takes it out of recall (nothing is deleted)]")


def propose_supersession(service: Service, args: dict[str, Any]) -> Answer:
    from quipu.capture import gates
    from quipu.curate import review
    from quipu.curate.apply import new_review_id
    from quipu.index import index

    old, new, reason = args["old_id"], args["new_id"], " ".join(args["reason"].split())
    if old == new:
        return Answer("propose_supersession: a memory cannot supersede itself", True)
    refusal = gates.check_text(reason, gates=("secret", "prompt-injection"))
    if refusal is not None:
        return Answer(f"propose_supersession: the reason was refused by the {refusal.gate} gate; nothing was queued", True)
    layers = service.layers()
    holding = {mid: [label or "this" for label, layer in layers if layer.store.exists(mid)] for mid in (old, new)}
    both = [layer for label, layer in layers if (label or "this") in holding[old] and (label or "this") in holding[new]]
    if not both:
        missing = [mid for mid in (old, new) if not holding[mid]]
        if missing:
            return Answer(f"propose_supersession: no memory {missing[0]!r}; nothing was queued\n"
                          "- call search_memory to find the id", True)
        return Answer(f"propose_supersession: {old} is in the {holding[old][0]} store and {new} in the "
                      f"{holding[new][0]} store; a supersession links two memories of one store, so nothing was "
                      "queued\n- remember the newer claim where the older one is, or propose it to a person", True)
    store = both[0].store
    for item in review.items(store):
        if item.kind == "proposal" and item.memory == old and item.other == new:
            return Answer(f"Already queued as {item.review_id}; `quipu review` shows it.")
    review_id = new_review_id()
    event = {"action": "review", "review_id": review_id, "kind": "proposal", "other": new,
             "verdict": "supersedes", "reason": reason, "session": service.session,
             "detail": f"the assistant proposes that {new} supersedes it: {reason}"}
    store.add_event(old, event, summary=f"quipu: review {old} vs {new}: proposed supersession",
                    trailers={"Quipu-Action": "review", "Quipu-Other": new, "Quipu-Review": review_id,
                              "Quipu-Session": service.session},
                    also_require=(new,))
    index.ensure_fresh(store)
    quipu = "quipu" if store is service.store else f"quipu --store {store.root}"  # the per-user store's item
    return Answer(f"Queued {review_id}: {new} would supersede {old}. Nothing changed; a person decides "
                  f"with `{quipu} review accept {review_id}` or `{quipu} review reject {review_id}`.")
