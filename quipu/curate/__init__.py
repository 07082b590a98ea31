"""The curator: the self-healing half of quipu's memory, as two passes over the store.

- ``deterministic``: byte-identical duplicates and memories naming paths that no longer exist.
- ``candidates`` + ``verdict``: related pairs from the index, a model verdict in a fixed JSON
  shape, and the four guards (as code) that decide whether a supersession may be applied.
- ``apply``: each decision one commit (supersession, review item or labelled finding).
- ``ledger``: what has been decided already, so no pair is asked about twice, and which
  decisions a person took back, so the sweep does not make them again.
- ``corpus``: the one load of the store a pass works on.

Nothing here deletes anything; ``quipu undo --sweep ID`` reverts a whole sweep.
The sweep that runs the passes, with its lock and budget, is ``quipu.curate.sweep``.
"""
from __future__ import annotations
