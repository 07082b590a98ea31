"""JSON for the prompt path in plain Python, without ``json`` and without loading ``_json``.

``import json`` pulls in ``re`` (and with it ``enum`` and ``functools``), which costs about as
much as starting the interpreter; even the C accelerator ``_json`` is a shared library whose
loading costs the hook more than parsing its few small documents here. Strings are cut out with
``str.find`` (escapes are rare), so a document costs about one step per value, not per character.
Offline code that reads whole transcripts uses ``json``. What it saves: bench/bench_stand_ins.py.

Contract: ``loads`` accepts one JSON value surrounded by optional whitespace and raises
``ValueError`` otherwise (NaN and Infinity refused, like ``json.loads(strict=False)``: control
characters inside strings are accepted); surrogate pairs in ``\\u`` escapes become one character.
``loads(text, long_strings=N)`` keeps of any string longer than N characters (as written) only
its first and last N/2, joined by a newline, so a megabyte-long value costs no more to read than
N characters: the hook reads a huge prompt's head and tail.
``dumps`` writes dicts, lists, tuples, strings, ints, floats, booleans and None as ASCII JSON
(``\\u`` escapes, surrogate pairs beyond the BMP), like ``json.dumps``.
"""
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: nothing is imported at run time
    from typing import Any
_WS = " \t\n\r"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NUMBER_CHARS = frozenset("0123456789+-.eE")
# Control characters other than the newline (which dumps replaces first), as json writes them.
_CONTROL = {i: f"\\u{i:04x}" for i in range(32)}
_CONTROL.update({ord("\r"): "\\r", ord("\t"): "\\t", ord("\b"): "\\b", ord("\f"): "\\f"})


_long_strings = 0  # set by loads for the duration of one call (the parser's functions are plain)


def loads(text: "str | bytes", long_strings: int = 0) -> object:
    global _long_strings
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    _long_strings = long_strings
    try:
        value, end = _value(text, _skip(text, 0))
    except IndexError:
        raise ValueError("JSON ends too early") from None
    except RecursionError:  # a line nested deeper than the parser recurses: as unreadable as any
        raise ValueError("JSON nested too deep") from None
    finally:
        _long_strings = 0
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
    limit = _long_strings
    if slash < 0:
        if limit and end - i > limit:
            return s[i : i + limit // 2] + "\n" + s[end - limit // 2 : end], end + 1
        return s[i:end], end + 1
    end = _closing_quote(s, i, end)
    if limit and end - i > limit:
        half = limit // 2
        return _window(s, i, i + half, True) + "\n" + _window(s, end - half, end, False), end + 1
    return _unescape(s, i, end), end + 1


def _closing_quote(s: str, i: int, quote: int) -> int:
    """The first quote at or after ``quote`` that no backslash escapes."""
    while True:
        k = quote
        while k > i and s[k - 1] == "\\":
            k -= 1
        if (quote - k) % 2 == 0:
            return quote
        quote = s.index('"', quote + 1)


def _window(s: str, start: int, end: int, head: bool) -> str:
    """``s[start:end]`` unescaped, its edge moved by up to an escape's length so as not to cut one."""
    for _ in range(12):
        try:
            text = _unescape(s, start, end)
        except ValueError:
            if head:
                end -= 1
            else:
                start += 1
            continue
        # Half a surrogate pair cut off at the edge is dropped: it is no character.
        if head and text and "\ud800" <= text[-1] <= "\udbff":
            return text[:-1]
        if not head and text and "\udc00" <= text[0] <= "\udfff":
            return text[1:]
        return text
    return ""


def _unescape(s: str, i: int, end: int) -> str:
    """The JSON string text ``s[i:end]`` (no unescaped quote in it) with its escapes decoded."""
    parts = []
    while True:
        slash = s.find("\\", i, end)
        if slash < 0:
            parts.append(s[i:end])
            return "".join(parts)
        parts.append(s[i:slash])
        if slash + 1 >= end:
            raise ValueError(f"invalid escape at {slash}")
        kind = s[slash + 1]
        if kind == "u":
            code = _hex4(s, slash + 2, end)
            i = slash + 6
            if 0xD800 <= code < 0xDC00 and s.startswith("\\u", i, end):
                low = _hex4(s, i + 2, end)
                if 0xDC00 <= low < 0xE000:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
            parts.append(chr(code))
        elif kind in _ESCAPES:
            parts.append(_ESCAPES[kind])
            i = slash + 2
        else:
            raise ValueError(f"invalid escape at {slash}")


def _hex4(s: str, i: int, end: int = -1) -> int:
    digits = s[i : min(i + 4, end) if end >= 0 else i + 4]
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


def _object(s: str, i: int) -> "tuple[dict[str, Any], int]":
    out: dict[str, Any] = {}
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


def _array(s: str, i: int) -> "tuple[list[Any], int]":
    out: list[Any] = []
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
