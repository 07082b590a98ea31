"""One deep list from the stores searched together (a project's store and the per-user store).

Contract: ``merge([(label, deep)])`` labels each hit with its store (``Hit.store``), orders
all by score, the first store (the project's) winning ties, keeps a memory both hold once (a
copy: the same id, title and description; two memories that only share an id are both kept), and
cuts at ``limit``; the list of a store read alone (label '') is returned as it is.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from quipu.index.deep import Deep, Hit


def merge(results: Sequence[tuple[str, Deep]], limit: int) -> Deep:
    if len(results) == 1 and not results[0][0]:  # one store read alone: its list as it is
        return results[0][1]
    first = results[0][1]
    merged = Deep(first.query, terms=first.terms, meaning=any(d.meaning for _l, d in results),
                  words_alone=first.words_alone)
    pool = [replace(h, store=label) for label, d in results for h in d.hits]
    pool.sort(key=lambda h: -h.score)  # stable: the first store keeps ties
    once: dict[tuple[str, str, str], Hit] = {}
    for hit in pool:
        once.setdefault((hit.id, hit.title, hit.description), hit)  # a copy both stores hold: the better-ranked
    merged.hits = list(once.values())[:limit]
    if not merged.hits:
        merged.reason = "; ".join(f"{label} store: {d.reason}" for label, d in results if d.reason)
    return merged
