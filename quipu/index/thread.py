"""A memory's thread: the memories written just before and just after it in the same session.

Contract:
- Memories that share a ``session`` (the Claude Code session that wrote them, or one conversation
  turned into memories) form a thread, in the order they were written: ``created``, then the id.
  A memory without a session has no thread.
- ``neighbours(db, ids)`` gives each listed memory that has a thread its (before, after) pair of
  ids, either None at the ends; a memory without a session, or not in the index, is left out.
  Two index seeks a memory (the ``memories_thread`` index), however long its session.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CHUNK = 400  # ids per statement, well under SQLite's variable limit

_SQL = """
SELECT m.id,
  (SELECT p.id FROM memories AS p
    WHERE p.session = m.session AND (p.created_ts, p.id) < (m.created_ts, m.id)
    ORDER BY p.created_ts DESC, p.id DESC LIMIT 1),
  (SELECT n.id FROM memories AS n
    WHERE n.session = m.session AND (n.created_ts, n.id) > (m.created_ts, m.id)
    ORDER BY n.created_ts, n.id LIMIT 1)
FROM memories AS m WHERE m.session IS NOT NULL AND m.id IN ({marks})
"""


def neighbours(db: Any, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
    """(the memory before, the memory after) in its session, for each of ``ids`` that has a session."""
    out: dict[str, tuple[str | None, str | None]] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), CHUNK):
        part = unique[start:start + CHUNK]
        for mid, before, after in db.execute(_SQL.format(marks=", ".join("?" * len(part))), part):
            out[str(mid)] = (before, after)
    return out
