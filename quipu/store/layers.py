"""The stores read together: a project's store and the per-user store.

Contract:
- ``find(explicit, cwd)`` returns the stores ``locate.find_stores`` names, each checked and
  opened, project first: a project's ``.quipu`` found by walking up, with the per-user store when
  it exists (``Store.layer`` is then ``"project"`` and ``"user"``), or the one chosen store alone
  (``layer`` ``""``). ``--store`` and ``QUIPU_STORE`` pin one store.
- Writes never look here: they go to ``Store.find``'s store (the project's, in a project).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

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
