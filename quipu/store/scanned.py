"""The secret check of a bulk write, once per file: what a caller scanned is not scanned again.

Contract:
- ``find_secrets(data, allow)`` is ``secrets_scan.find_secrets`` on the bytes ``data`` (decoded as a
  commit's files are); when it finds nothing with no rule vouched for, a digest of exactly those
  bytes is remembered for the life of the process, and those bytes are not scanned again.
- ``refuse_secrets(changes, message, allow, fields=...)`` is ``secrets_scan.refuse_secrets`` over
  the fields and files whose exact bytes were not found clean here already, and always over the message; it returns the
  vouched rules that were needed. A bulk writer (an import of thousands of notes) that checked each
  note to list the ones it leaves out then pays for the scan once per note, not twice; a file whose
  bytes changed after its check is scanned. Bytes are remembered as clean only when no rule was
  vouched for, so a vouched rule a file needs is always found and named.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping

from quipu.lite import blake2b
from quipu.store import secrets_scan

_CLEAN: set[bytes] = set()


def _digest(data: bytes) -> bytes:
    return blake2b(data, digest_size=20).digest()


def find_secrets(data: bytes, allow: Collection[str] = (), *, marker: bool = False) -> list[secrets_scan.Secret]:
    if _digest(data) in _CLEAN:  # clean with nothing vouched for: clean whatever is vouched for now
        return []
    text = data.decode("utf-8", "replace")
    spans = secrets_scan.find_secrets(text, allow, marker=marker)
    if not spans and not allow and not (marker and secrets_scan.ALLOW_MARKER in text):
        _CLEAN.add(_digest(data))
    return spans


def refuse_secrets(changes: Mapping[str, bytes | None], message: str, allow: Collection[str] = (), *,
                   marker: bool = False, fields: Mapping[str, str] | None = None) -> list[str]:
    """``fields``: the raw strings the files were rendered from, encoded one at a time (the fields
    of 100,000 notes are never all copied at once) and checked before the files."""
    unseen = {name: data for name, text in (fields or {}).items()
              if _digest(data := text.encode("utf-8")) not in _CLEAN}
    unseen.update((rel, data) for rel, data in changes.items() if data is not None and _digest(data) not in _CLEAN)
    return secrets_scan.refuse_secrets(unseen, message, allow, marker=marker)
