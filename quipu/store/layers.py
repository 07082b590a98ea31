"""The stores read together: a project's store and the per-user store.

Contract:
- ``find(explicit, cwd)`` returns the stores ``locate.find_stores`` names, each checked and
  opened, project first: a project's ``.quipu`` found by walking up, with the per-user store when
  it exists (``Store.layer`` is then ``"project"`` and ``"user"``), or the one chosen store alone
  (``layer`` ``""``). ``--store`` and ``QUIPU_STORE`` pin one store.
- Writes never look here: they go to ``Store.find``'s store (the project's, in a project).
  ``elsewhere(store, what, holds, fix)`` is the fix a write's "not found" error gives: the
  ``--store`` to add when the per-user store holds what the project's store lacks; ``missing``
  the error for a memory; ``read_together(store)`` the stores the hook reads with ``store``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from quipu.errors import NotFound
from quipu.prompt import locate
from quipu.store.store import Store


def find(explicit: str | None = None, cwd: str | None = None, env: Mapping[str, str] | None = None) -> list[Store]:
    how = locate.find_store_root(explicit, cwd, env)[1]
    stores = []
    for root, label in locate.find_stores(explicit, cwd, env):
        store = Store(Path(root), "per-user default" if label == locate.USER else how)
        store.layer = label
        store.check()
        stores.append(store)
    return stores


def user_store(store: Store, env: Mapping[str, str] | None = None) -> Store | None:
    """The per-user store when ``store`` is a project's store found by walking up, else None."""
    if store.how != locate.WALKED:
        return None
    user = locate.default_store(env)
    if Path(user) == store.root or not locate.is_store(user):
        return None
    found = Store(Path(user), "per-user default")
    found.layer = locate.USER
    return found


def read_together(store: Store) -> list[Store]:
    """``store``, and the per-user store when ``store`` is a project's found by walking up: what the
    prompt hook recalls from there, so what a write there must not say again."""
    user = user_store(store)
    return [store] if user is None else [store, user]


def elsewhere(store: Store, what: str, holds: Callable[[Store], bool], fix: str) -> str:
    """``fix``, unless ``store`` is a project's store found by walking up and the per-user store
    ``holds`` what was asked for: inside such a project, `quipu list` and `quipu search` show the
    per-user store's memories beside the project's, while a command that changes one (label,
    retract, supersede, undo) acts on the project's, so the fix names the --store to add."""
    try:
        user = user_store(store)
        if user is not None and holds(user):
            return (f"- {what} in the per-user store, which reads show beside this project's; commands that "
                    f"change a memory act on the project's store here: add --store {user.root}")
    except Exception:  # noqa: BLE001 - the hint is a courtesy: the error stands without it
        pass
    return fix


def missing(store: Store, memory_id: str) -> NotFound:
    """The error for a memory ``store`` lacks, naming the per-user store when it holds it."""
    fix = elsewhere(store, f"{memory_id} is", lambda s: s.exists(memory_id), "- run `quipu list` to see the ids")
    return NotFound(f"no memory {memory_id!r} in {store.root}\n{fix}")
