"""JSON for the prompt path in plain Python, without ``json`` and without loading ``_json``.

``import json`` pulls in ``re`` (and with it ``enum`` and ``functools``), which costs about as
much as starting the interpreter; even the C accelerator ``_json`` is a shared library whose
loading costs the hook more than parsing its few small documents here. Strings are cut out with
``str.find`` (escapes are rare), so a document costs about one step per value, not per character.
Offline code that reads whole transcripts uses ``json``.

Contract: ``loads`` accepts one JSON value surrounded by optional whitespace and raises
``ValueError`` otherwise (NaN and Infinity refused, like ``json.loads(strict=False)``: control
characters inside strings are accepted); surrogate pairs in ``\\u`` escapes become one character.
``dumps`` writes dicts, lists, tuples, strings, ints, floats, booleans and None as ASCII JSON
(``\\u`` escapes, surrogate pairs beyond the BMP), like ``json.dumps``.
"""
_WS = " \t\n\r"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NUMBER_CHARS = frozenset("0123456789+-.eE")
# Control characters other than the newline (which dumps replaces first), as json writes them.
_CONTROL = {i: f"\\u{i:04x}" for i in range(32)}
_CONTROL.update({ord("\r"): "\\r", ord("\t"): "\\t", ord("\b"): "\\b", ord("\f"): "\\f"})


def loads(text: "str | bytes") -> object:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    try:
        value, end = _value(text, _skip(text, 0))
    except IndexError:
        raise ValueError("JSON ends too early") from None
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _value(s: str, i: int) -> "tuple[object, int]":
    c = s[i]
    if c == '"':
        return _string(s, i + 1)
    if c == "{":
        return _object(s, i + 1)
    if c == "[":
        return _array(s, i + 1)
    if s.startswith("true", i):
        return True, i + 4
    if s.startswith("false", i):
        return False, i + 5
    if s.startswith("null", i):
        return None, i + 4
    return _number(s, i)


def _string(s: str, i: int) -> "tuple[str, int]":
    """The string whose opening quote is just before ``i``; returns it and the index after it."""
    end = s.index('"', i)
    slash = s.find("\\", i, end)
    if slash < 0:
        return s[i:end], end + 1
    parts = []
    while True:
        slash = s.find("\\", i)
        end = s.index('"', i)
        if slash < 0 or slash > end:
            parts.append(s[i:end])
            return "".join(parts), end + 1
        parts.append(s[i:slash])
        kind = s[slash + 1]
        if kind == "u":
            code = _hex4(s, slash + 2)
            i = slash + 6
            if 0xD800 <= code < 0xDC00 and s.startswith("\\u", i):
                low = _hex4(s, i + 2)
                if 0xDC00 <= low < 0xE000:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
            parts.append(chr(code))
        elif kind in _ESCAPES:
            parts.append(_ESCAPES[kind])
            i = slash + 2
        else:
            raise ValueError(f"invalid escape at {slash}")


def _hex4(s: str, i: int) -> int:
    digits = s[i : i + 4]
    if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise ValueError(f"invalid \\u escape at {i}")
    return int(digits, 16)


def _number(s: str, i: int) -> "tuple[object, int]":
    j = i
    n = len(s)
    while j < n and s[j] in _NUMBER_CHARS:
        j += 1
    token = s[i:j]
    body = token[1:] if token.startswith("-") else token
    if not body or not body[0].isdigit() or (len(body) > 1 and body[0] == "0" and body[1].isdigit()):
        raise ValueError(f"not a JSON value at {i}")
    if body[-1] in "+-.eE" or ".e" in body.lower():
        raise ValueError(f"bad number at {i}")
    try:
        if "." in token or "e" in token or "E" in token:
            return float(token), j
        return int(token), j
    except ValueError:
        raise ValueError(f"bad number at {i}") from None


def _object(s: str, i: int) -> "tuple[dict, int]":
    out: dict = {}
    i = _skip(s, i)
    if s[i] == "}":
        return out, i + 1
    while True:
        if s[i] != '"':
            raise ValueError(f"expected a key at {i}")
        key, i = _string(s, i + 1)
        i = _skip(s, i)
        if s[i] != ":":
            raise ValueError(f"expected ':' at {i}")
        out[key], i = _value(s, _skip(s, i + 1))
        i = _skip(s, i)
        if s[i] == "}":
            return out, i + 1
        if s[i] != ",":
            raise ValueError(f"expected ',' or '}}' at {i}")
        i = _skip(s, i + 1)


def _array(s: str, i: int) -> "tuple[list, int]":
    out: list = []
    i = _skip(s, i)
    if s[i] == "]":
        return out, i + 1
    while True:
        value, i = _value(s, i)
        out.append(value)
        i = _skip(s, i)
        if s[i] == "]":
            return out, i + 1
        if s[i] != ",":
            raise ValueError(f"expected ',' or ']' at {i}")
        i = _skip(s, i + 1)


def _escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def dumps(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        # str.replace per kind of character, not a translate table per character: the injected
        # context is a thousand characters and a few kinds of escapes.
        text = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        if not (text.isascii() and text.isprintable()):
            for c in set(text):
                if c < " " or c >= "\x80":
                    text = text.replace(c, _CONTROL[ord(c)] if c < " " else _escape(ord(c)))
        return '"' + text + '"'
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
