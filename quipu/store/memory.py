"""The memory file format: markdown with a closed YAML frontmatter schema.

A memory is one file ``memories/<first two chars of id>/<id>.md``::

    ---
    id: "3f9a0c12ab7e"
    title: "Production deploy accident"
    ...
    ---
    body text

Contract:
- ``parse_memory`` never executes YAML tags and refuses aliases, anchors and explicit tags; it
  refuses files over ``MAX_FILE_BYTES`` and files that are not UTF-8. Every refusal is an
  ``InvalidMemory`` naming the file and the problem.
- ``render_memory`` writes each frontmatter value as a JSON scalar or flow list (JSON is valid
  YAML), so files quipu wrote parse on a fast path without YAML; hand-written YAML is read with
  the safe loader (``quipu.store.frontmatter_yaml``). What it renders of a memory ``Memory.create``
  made, ``parse_memory`` reads back as that memory once its bytes pass ``check_file_bytes`` (size,
  NUL): a bulk import parses once.
- ``Memory.create`` is the one place fields are validated; bad fields name the field and the
  allowed values. Every field is checked for type, range, size and encoding (text must be
  encodable as UTF-8: no lone surrogates; one-line fields hold no control characters), so a
  Memory it returns can always be indexed and ranked.
- ``parse_memory`` raises nothing but ``InvalidMemory``, whatever the bytes: a value YAML
  cannot build (``created: 2026-13-45``, a 5,001-digit number) names its field.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re

from quipu.errors import InvalidMemory
from quipu.store.frontmatter import parse_fields, plain_json_string

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: reading a memory does not load typing
    from typing import Any

MAX_FILE_BYTES = 1_000_000
MAX_LINE_CHARS = 300        # title, description
MAX_LIST_ITEMS = 200        # topics, entities, aliases, supersedes
MAX_OPT_CHARS = 4096        # session, project (a path)
MAX_HALF_LIFE_DAYS = 1e6    # about 2,700 years; anything longer is written as null (never decays)
CREATED_YEARS = (1900, 2999)

# Closed set of classes. Half-lives in days; None means the memory never decays.
# project-note 150 days comes from the design (a project note halves its weight every ~5 months);
# rules and preferences the user gave are standing instructions and never decay.
CLASSES: dict[str, float | None] = {
    "rule": None,
    "preference": None,
    "fact": 365.0,
    "reference": 365.0,
    "project-note": 150.0,
    "event": 90.0,
}
ORIGINS = ("user", "session", "import", "assistant")  # assistant: written through the MCP server
STATUSES = ("active", "superseded")

# \Z, not $: "$" also matches before a trailing newline, which would let "abc\n" through.
ID_RE = re.compile(r"\A[a-z0-9][a-z0-9-]{2,63}\Z")
_TOPIC_RE = re.compile(r"\A[^\x00-\x1f\x7f]{1,80}\Z")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # every C0 control but the tab, and DEL

# Frontmatter keys in the order they are written. Anything else is refused.
FIELDS = ("id", "title", "description", "class", "topics", "entities", "aliases", "origin", "created",
          "half_life_days", "status", "supersedes", "session", "project", "always_on")
REQUIRED = ("id", "title", "class", "created")


def new_id() -> str:
    """A fresh random id; its first two characters spread memories over 256 shard folders."""
    return os.urandom(6).hex()  # secrets.token_hex, without importing hmac and hashlib


def memory_path(memory_id: str) -> str:
    """The repository path of a memory; refuses ids that could leave the store."""
    check_id(memory_id)
    return f"memories/{memory_id[:2]}/{memory_id}.md"


def _shown(value: object, limit: int = 80) -> str:
    """A value as a message shows it: its repr, cut short, with anything secret-like redacted."""
    from quipu.store import secrets_scan

    text = repr(value) if not isinstance(value, int) or value.bit_length() < 1000 else "a huge number"
    text = secrets_scan.redact(text)
    return text if len(text) <= limit else text[:limit] + "..."


def check_id(memory_id: object, what: str = "id") -> str:
    if not isinstance(memory_id, str) or not ID_RE.match(memory_id):
        raise InvalidMemory(
            f"invalid {what} {_shown(memory_id)}: use 3-64 characters of a-z, 0-9 and '-', "
            "starting with a letter or digit (no '/', '..', NUL or spaces)"
        )
    return memory_id


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


_ATTRS = ("id", "title", "body", "description", "cls", "topics", "entities", "aliases", "origin", "created",
          "half_life_days", "status", "supersedes", "session", "project", "always_on", "extra")
_COMPARED = _ATTRS[:-1]  # ``extra`` is not compared


class Memory:
    """One memory's fields, immutable (``with_changes`` makes a changed copy); equal when every
    field but ``extra`` is. ``Memory.create`` validates; the constructor takes fields as given.

    A plain class, not a dataclass: every command that reads or writes a memory loads this
    module, and ``dataclasses`` (with ``inspect``) would cost each of them several milliseconds."""

    __slots__ = _ATTRS
    id: str
    title: str
    body: str
    description: str
    cls: str
    topics: tuple[str, ...]
    entities: tuple[str, ...]
    aliases: tuple[str, ...]
    origin: str
    created: str
    half_life_days: float | None
    status: str
    supersedes: tuple[str, ...]
    session: str | None
    project: str | None
    always_on: bool
    extra: dict[str, Any]

    def __init__(  # the fields in a dataclass's order, positional or by name
        self, id: str, title: str, body: str = "", description: str = "",  # noqa: A002 - the field's name
        cls: str = "project-note", topics: tuple[str, ...] = (), entities: tuple[str, ...] = (),
        aliases: tuple[str, ...] = (), origin: str = "user", created: str = "", half_life_days: float | None = None,
        status: str = "active", supersedes: tuple[str, ...] = (), session: str | None = None,
        project: str | None = None, always_on: bool = False, extra: dict[str, Any] | None = None,
    ) -> None:
        setter = object.__setattr__
        for name, value in zip(_ATTRS, (id, title, body, description, cls, topics, entities, aliases, origin, created,
                                        half_life_days, status, supersedes, session, project, always_on,
                                        {} if extra is None else extra), strict=True):
            setter(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a Memory is immutable (use with_changes)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a Memory is immutable")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _COMPARED)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if type(other) is Memory else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Memory({', '.join(f'{name}={getattr(self, name)!r}' for name in _ATTRS)})"

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle, past the immutable __setattr__
        return Memory, tuple(getattr(self, name) for name in _ATTRS)

    @property
    def path(self) -> str:
        return memory_path(self.id)

    @classmethod
    def create(cls, fields: dict[str, Any], body: str = "", *, source: str = "memory") -> Memory:
        """Validate a frontmatter mapping and build a Memory; the only validating constructor."""
        if not isinstance(fields, dict):
            raise InvalidMemory(f"{source}: frontmatter must be a mapping of field: value")
        unknown = sorted(set(map(str, fields)) - set(FIELDS))
        if unknown:
            raise InvalidMemory(
                f"{source}: unknown field(s) {', '.join(unknown)}; allowed fields: {', '.join(FIELDS)}"
            )
        for name in REQUIRED:
            if fields.get(name) in (None, ""):
                raise InvalidMemory(f"{source}: field '{name}' is required")
        try:
            mid = check_id(fields["id"])
        except InvalidMemory as exc:
            raise InvalidMemory(f"{source}: field 'id': {exc}") from None
        klass = fields["class"]
        if not isinstance(klass, str) or klass not in CLASSES:
            raise InvalidMemory(
                f"{source}: field 'class' is {_shown(klass)}; allowed values: {', '.join(CLASSES)}"
            )
        origin = fields.get("origin") or "user"
        if not isinstance(origin, str) or origin not in ORIGINS:
            raise InvalidMemory(
                f"{source}: field 'origin' is {_shown(origin)}; allowed values: {', '.join(ORIGINS)}"
            )
        status = fields.get("status") or "active"
        if not isinstance(status, str) or status not in STATUSES:
            raise InvalidMemory(
                f"{source}: field 'status' is {_shown(status)}; allowed values: {', '.join(STATUSES)}"
            )
        if "half_life_days" in fields:
            half_life = _half_life(fields["half_life_days"], source)
        else:
            half_life = CLASSES[klass]
        always_on = fields.get("always_on", False)
        if not isinstance(always_on, bool):
            raise InvalidMemory(f"{source}: field 'always_on' must be true or false")
        supersedes = _str_list(fields, "supersedes", source)
        for other in supersedes:
            try:
                check_id(other, "supersedes entry")
            except InvalidMemory as exc:
                raise InvalidMemory(f"{source}: field 'supersedes': {exc}") from None
        if not isinstance(body, str):
            raise InvalidMemory(f"{source}: body must be text")
        return cls(
            id=mid,
            title=_one_line(fields, "title", source, required=True),
            body=body,
            description=_one_line(fields, "description", source),
            cls=klass,
            topics=_str_list(fields, "topics", source),
            entities=_str_list(fields, "entities", source),
            aliases=_str_list(fields, "aliases", source),
            origin=origin,
            created=_created(fields["created"], source),
            half_life_days=half_life,
            status=status,
            supersedes=supersedes,
            session=_opt_str(fields, "session", source),
            project=_opt_str(fields, "project", source),
            always_on=always_on,
        )

    def frontmatter(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "class": self.cls,
            "topics": list(self.topics),
            "entities": list(self.entities),
            "aliases": list(self.aliases),
            "origin": self.origin,
            "created": self.created,
            "half_life_days": self.half_life_days,
            "status": self.status,
            "supersedes": list(self.supersedes),
        }
        if self.session:
            data["session"] = self.session
        if self.project:
            data["project"] = self.project
        if self.always_on:
            data["always_on"] = True
        return data

    def with_changes(self, **changes: Any) -> Memory:
        """A copy with ``changes`` (field names as the constructor takes them)."""
        return Memory(**{**{name: getattr(self, name) for name in _ATTRS}, **changes})


def _half_life(value: object, source: str) -> float | None:
    if value is None or value == "never":
        return None
    # ``not 0 < value <= MAX`` also refuses NaN; comparing an int never overflows.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_HALF_LIFE_DAYS:
        raise InvalidMemory(
            f"{source}: field 'half_life_days' must be a positive number of days, at most "
            f"{MAX_HALF_LIFE_DAYS:,.0f}, or null (never decays)"
        )
    return float(value)


def check_project(value: str, source: str) -> str | None:
    """A ``project`` field's value as a memory holds it (None when empty); InvalidMemory naming
    ``source`` when no memory may hold it."""
    return _opt_str({"project": value}, "project", source)


def _encodable(value: str, name: str, source: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidMemory(f"{source}: field '{name}' is not valid Unicode text (a lone surrogate)") from None
    return value


def _one_line(fields: dict[str, Any], name: str, source: str, required: bool = False) -> str:
    value = fields.get(name)
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidMemory(f"{source}: field '{name}' must be text")
    value = _encodable(value, name, source).strip()
    if _CONTROL_RE.search(value):
        raise InvalidMemory(f"{source}: field '{name}' must be one line, without control characters")
    if len(value) > MAX_LINE_CHARS:
        raise InvalidMemory(f"{source}: field '{name}' is {len(value)} characters; the limit is {MAX_LINE_CHARS}")
    if required and not value:
        raise InvalidMemory(f"{source}: field '{name}' is required")
    return value


def _opt_str(fields: dict[str, Any], name: str, source: str) -> str | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or _CONTROL_RE.search(value) or len(value) > MAX_OPT_CHARS:
        raise InvalidMemory(
            f"{source}: field '{name}' must be one line of text of at most {MAX_OPT_CHARS} characters"
        )
    return _encodable(value, name, source)


def _str_list(fields: dict[str, Any], name: str, source: str) -> tuple[str, ...]:
    value = fields.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise InvalidMemory(f"{source}: field '{name}' must be a list of short texts")
    if len(value) > MAX_LIST_ITEMS:
        raise InvalidMemory(f"{source}: field '{name}' has {len(value)} entries; the limit is {MAX_LIST_ITEMS}")
    out = []
    for item in value:
        if not isinstance(item, str) or not _TOPIC_RE.match(item.strip() or "\x00"):
            raise InvalidMemory(
                f"{source}: field '{name}' has {_shown(item)}; entries must be one-line texts of 1-80 characters"
            )
        out.append(_encodable(item, name, source).strip())
    return tuple(dict.fromkeys(out))


def _created(value: object, source: str) -> str:
    try:
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=_dt.timezone.utc)
            text = value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        elif isinstance(value, _dt.date):
            text = value.isoformat()
        elif isinstance(value, str) and len(value) <= 64:
            text = value.strip()
        else:
            raise ValueError(value)
        stamp = parse_created(text)
        stamp.timestamp()
        if not CREATED_YEARS[0] <= stamp.year <= CREATED_YEARS[1]:
            raise ValueError(value)
    except (ValueError, OverflowError, UnicodeError):
        raise InvalidMemory(
            f"{source}: field 'created' is {_shown(value)}; use a date between {CREATED_YEARS[0]} and "
            f"{CREATED_YEARS[1]}, a date like 2026-11-29 or 2026-11-29T13:05:00Z"
        ) from None
    return text


def parse_created(text: str) -> _dt.datetime:
    """Parse a created value into an aware UTC datetime (a bare date is midnight UTC)."""
    if len(text) == 10:
        day = _dt.date.fromisoformat(text)
        return _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.timezone.utc)
    stamp = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp


# ---------------------------------------------------------------- reading and writing


def check_file_bytes(data: bytes, source: str = "memory") -> None:
    """What ``parse_memory`` refuses of a file's bytes before it reads any field: its size, NUL."""
    if len(data) > MAX_FILE_BYTES:
        raise InvalidMemory(f"{source}: {len(data):,} bytes; a memory file may hold at most {MAX_FILE_BYTES:,}\n"
                            "- split it into several smaller memories")
    if b"\x00" in data:
        raise InvalidMemory(f"{source}: contains NUL bytes; a memory must be UTF-8 text")


def parse_memory(data: bytes, source: str = "memory") -> Memory:
    """Parse and validate a memory file's bytes."""
    check_file_bytes(data, source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMemory(f"{source}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    fields, body = parse_fields(text, source)
    return Memory.create(fields, body, source=source)


def _plain(value: object) -> bool:
    return type(value) is str and plain_json_string(value)


def _json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, without its machinery for a plain string or list of them."""
    if _plain(value):
        return f'"{value}"'
    if type(value) is list and all(map(_plain, value)):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def render_memory(memory: Memory) -> bytes:
    lines = ["---"]
    for key, value in memory.frontmatter().items():
        lines.append(f"{key}: {_json(value)}")
    lines.append("---")
    body = memory.body if memory.body.endswith("\n") or not memory.body else memory.body + "\n"
    return ("\n".join(lines) + "\n" + body).encode("utf-8")
