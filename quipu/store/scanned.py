"""The secret check of a bulk write, once per file: what a caller scanned is not scanned again.

Contract:
- ``find_secrets(data, allow)`` is ``secrets_scan.find_secrets`` on the bytes ``data`` (decoded as a
  commit's files are); when it finds nothing with no rule vouched for, a digest of exactly those
  bytes is remembered for the life of the process, and those bytes are not scanned again.
- ``rendered_holds_secret(data, fields, allow)`` checks a memory file and the fields it was
  rendered from (``render_memory``) with each byte scanned once: its frontmatter (up to the line
  ``---`` that closes it), then its body as a text of its own, which is the body field when that
  is exactly the file's tail; each other non-empty field alone (few bytes: a frontmatter value is
  JSON-escaped in the file, so the raw string is checked as well). No rule's match runs across
  the closing line: no pattern takes both ``-`` and a line break, but a private key's header,
  which is found in the frontmatter alone (``tests/import_once_test.py`` compares this with the
  whole file and each field scanned apart, over the secret corpus). The file's bytes are then
  remembered as clean, as if scanned whole. ``rendered_parts(data, values)`` are those texts and
  ``parts_hold_secret(parts, allow)`` their check (what another process is handed).
- ``remember_clean(data, fields, allow)``: a file and its fields another process found clean with
  ``rendered_holds_secret`` (``quipu.store.secrets_child``), remembered as that call would have
  remembered them (nothing when a rule or the inline marker may have vouched for any of it).
- ``refuse_secrets(changes, message, allow, fields=...)`` is ``secrets_scan.refuse_secrets`` over
  the fields and files whose exact bytes were not found clean here already, and always over the message; it returns the
  vouched rules that were needed. A bulk writer (an import of thousands of notes) that checked each
  note to list the ones it leaves out then pays for the scan once per note, not twice; a file whose
  bytes changed after its check is scanned. Bytes are remembered as clean only when no rule was
  vouched for, so a vouched rule a file needs is always found and named.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

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


def rendered_parts(data: bytes, fields: Iterable[str]) -> list[bytes]:
    """The texts a rendered memory file and the values of the fields it was made from are scanned
    as, each byte once (see the contract)."""
    cut = data.find(b"\n---\n") + 5 if data.startswith(b"---\n") else 0
    parts = [data[:cut], data[cut:]] if cut > 4 else [data]
    tail = parts[-1]
    parts += [raw for value in fields if value and (raw := value.encode("utf-8")) != tail]
    return [part for part in parts if part]


def parts_hold_secret(parts: Iterable[bytes], allow: Collection[str] = (), *, marker: bool = False) -> bool:
    return any(find_secrets(part, allow, marker=marker) for part in parts)


def rendered_holds_secret(data: bytes, fields: Mapping[str, str], allow: Collection[str] = (), *,
                          marker: bool = False) -> bool:
    """Whether a rendered memory file or a field it was made from holds a secret (see the contract)."""
    if parts_hold_secret(rendered_parts(data, fields.values()), allow, marker=marker):
        return True
    if not allow and not (marker and secrets_scan.ALLOW_MARKER.encode() in data):
        _CLEAN.add(_digest(data))
    return False


def remember_clean(data: bytes, fields: Mapping[str, str], allow: Collection[str] = ()) -> None:
    """A file and its fields that ``rendered_holds_secret`` (with ``marker``) found clean in another
    process: remembered as it would have remembered them, so the commit does not scan them again.
    Nothing is remembered when a rule or the inline marker may have vouched for any of it."""
    if allow or secrets_scan.ALLOW_MARKER.encode() in data:
        return
    raws = [raw for value in fields.values() if value and (raw := value.encode("utf-8"))]
    if any(secrets_scan.ALLOW_MARKER.encode() in raw for raw in raws):
        return
    _CLEAN.add(_digest(data))
    _CLEAN.update(map(_digest, raws))


def refuse_secrets(changes: Mapping[str, bytes | None], message: str, allow: Collection[str] = (), *,
                   marker: bool = False, fields: Mapping[str, str] | None = None) -> list[str]:
    """``fields``: the raw strings the files were rendered from, encoded one at a time (the fields
    of 100,000 notes are never all copied at once) and checked before the files."""
    unseen = {name: data for name, text in (fields or {}).items()
              if text and _digest(data := text.encode("utf-8")) not in _CLEAN}
    unseen.update((rel, data) for rel, data in changes.items() if data is not None and _digest(data) not in _CLEAN)
    return secrets_scan.refuse_secrets(unseen, message, allow, marker=marker)
