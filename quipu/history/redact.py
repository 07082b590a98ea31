"""A session made fit to archive: every field kept from a transcript whole and redacted.

Contract:
- ``whole(text)``: each lone surrogate (half of a character cut in two, which a JSON escape can
  carry and UTF-8 cannot) as U+FFFD, so that the archive and the index can hold it.
- ``redact_fields(session)``, in place: every field of the session and its turns other than the
  turns' text, made whole and searched by the one scanner (``quipu.store.secrets_scan``, the
  detector capture and the turns' text use). The project folder (a transcript's ``cwd``) and each
  turn's branch and time are ``redact``-ed (``[REDACTED:<kind>]``). The session id and each turn's
  key name things and must stay distinct and stable, so one the scanner finds a secret in is
  replaced whole by a hash of it: ``redacted-<hash>`` for the session, ``<session>/h-<hash>`` for
  a key (the part after the session id). A UUID or an ISO time is not scanned (neither can hold a
  secret), and each distinct value is scanned once. Returns the number of secrets found for each
  turn, a value's counted once, with the first turn that has it (the session's own fields with
  its first turn).
- ``redact_turns(session)``: ``redact_fields``, then each turn's text redacted; the number of
  secrets found for each turn, in its fields and its text.
"""
from __future__ import annotations

import hashlib
import re

from quipu.history.reader import RawTurn, Session
from quipu.store import secrets_scan

_SURROGATE = re.compile("[\ud800-\udfff]")
# What a field of Claude Code's, Codex's or an export's mostly is, and cannot hold a secret.
_PLAIN = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                    r"|\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?)?(?:Z|[+-]\d\d:?\d\d)?|")


def whole(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD (see the module contract)."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def may_hold_secret(text: str) -> bool:
    """The scanner's own pre-filter: False only when no secret rule can match (most turns)."""
    return secrets_scan.may_hold_secret(text)


def whole_turn(raw: RawTurn) -> RawTurn:
    if raw.text.isascii() and raw.key.isascii() and raw.ts.isascii() and raw.branch.isascii():
        return raw
    return RawTurn(whole(raw.key), raw.role, whole(raw.text), whole(raw.ts), whole(raw.branch))


def _hashed(prefix: str, text: str) -> str:
    return prefix + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def redact_fields(session: Session) -> list[int]:
    """Redact every field of ``session`` but the turns' text, in place (see the module contract)."""
    turns = list(map(whole_turn, session.turns))
    sid, project = whole(session.session_id), whole(session.project)
    prefix = sid + "/"

    def rest(key: str) -> str:
        return key[len(prefix):] if key.startswith(prefix) else key

    values = dict.fromkeys(v for v in (sid, project, *(f for raw in turns for f in (rest(raw.key), raw.ts, raw.branch)))
                           if not _PLAIN.fullmatch(v))
    scanned = list(values)
    found = {v: spans for v, spans in zip(scanned, secrets_scan.find_secrets_many(scanned), strict=True) if spans}
    counts = [0] * len(turns)
    if not found:
        session.session_id, session.project, session.turns = sid, project, turns
        return counts
    new_sid = _hashed("redacted-", sid) if sid in found else sid
    counted = {sid, project}
    for n, raw in enumerate(turns):
        part = rest(raw.key)
        key = raw.key
        if part in found:
            key = f"{new_sid}/{_hashed('h-', part)}"
        elif new_sid != sid and key.startswith(prefix):
            key = f"{new_sid}/{part}"
        ts = secrets_scan.redact(raw.ts, found[raw.ts]) if raw.ts in found else raw.ts
        branch = secrets_scan.redact(raw.branch, found[raw.branch]) if raw.branch in found else raw.branch
        for value in (part, raw.ts, raw.branch):
            if value in found and value not in counted:  # a secret counted once, where it is first seen
                counted.add(value)
                counts[n] += len(found[value])
        turns[n] = RawTurn(key, raw.role, raw.text, ts, branch)
    if turns:
        counts[0] += len(found.get(sid, ())) + len(found.get(project, ()))
    session.session_id = new_sid
    session.project = secrets_scan.redact(project, found[project]) if project in found else project
    session.turns = turns
    return counts


def redact_turns(session: Session) -> list[int]:
    """``redact_fields``, then each turn's text redacted, in place; the secrets found for each turn."""
    counts = redact_fields(session)
    turns = session.turns
    for n, spans in enumerate(secrets_scan.find_secrets_many([raw.text for raw in turns])):
        if spans:
            turns[n] = turns[n]._replace(text=secrets_scan.redact(turns[n].text, spans))
            counts[n] += len(spans)
    return counts
