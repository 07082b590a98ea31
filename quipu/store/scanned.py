"""The secret check of a bulk write, once per file: what a caller scanned is not scanned again.

Contract:
- ``find_secrets(data)`` is ``secrets_scan.find_secrets`` on the bytes ``data`` (decoded as a
  commit's files are); when it finds nothing, a digest of exactly those bytes is remembered for the
  life of the process.
- ``refuse_secrets(changes, message)`` is ``secrets_scan.refuse_secrets`` over the files whose
  exact bytes were not found clean here already, and always over the message. A bulk writer (an
  import of thousands of notes) that checked each note to list the ones it leaves out then pays
  for the scan once per note, not twice; a file whose bytes changed after its check is scanned.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping

from quipu.store import secrets_scan

_CLEAN: set[bytes] = set()


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=20).digest()


def find_secrets(data: bytes) -> list[secrets_scan.Secret]:
    spans = secrets_scan.find_secrets(data.decode("utf-8", "replace"))
    if not spans:
        _CLEAN.add(_digest(data))
    return spans


def refuse_secrets(changes: Mapping[str, bytes | None], message: str) -> None:
    unseen = {rel: data for rel, data in changes.items() if data is not None and _digest(data) not in _CLEAN}
    secrets_scan.refuse_secrets(unseen, message)
