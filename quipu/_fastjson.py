"""JSON for the prompt path without importing the ``json`` package.

``import json`` pulls in ``re`` (and with it ``enum`` and ``functools``), which costs about as
much as starting the interpreter. The C accelerator ``_json`` that ``json`` itself uses parses and
quotes strings on its own; this module drives it directly. Where ``_json`` is missing (another
Python implementation) it falls back to ``json``.

Contract: ``loads`` accepts one JSON value surrounded by optional whitespace and raises
``ValueError`` otherwise (like ``json.loads``, NaN/Infinity refused); ``dumps`` writes dicts,
lists, tuples, strings, ints, floats, booleans and None as ASCII JSON.
"""
try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]

_WS = " \t\n\r"


class _Context:
    """The attributes ``_json.make_scanner`` reads from a JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name: str) -> object:
        raise ValueError(f"JSON constant {name} is not allowed")


_scan = _json.make_scanner(_Context()) if _json is not None else None


def loads(text: str | bytes) -> object:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = 0
    end = len(text)
    while start < end and text[start] in _WS:
        start += 1
    while end > start and text[end - 1] in _WS:
        end -= 1
    try:
        value, stop = _scan(text[:end], start)
    except StopIteration:
        raise ValueError("not JSON") from None
    if stop != end:
        raise ValueError("extra data after the JSON value")
    return value


def dumps(value: object) -> str:
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinities are not JSON")
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
