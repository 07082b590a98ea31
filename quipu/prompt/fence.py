"""Making stored text safe to inject into a model's context or print to a terminal.

This module is on the prompt path: standard library only, and not even ``re``. Contract:
- ``neutralise(text)`` makes every occurrence of a quipu fence tag (``<quipu-memory``,
  ``</quipu-always-on>``: any tag whose name starts with ``quipu``, in any case, with any spaces,
  slashes, ``-``/``_`` or a look-alike angle bracket) inert by writing its bracket as ``&lt;``,
  so stored text can neither close the "reference data" fence nor open a second one.
- ``clean(text)`` removes what a terminal or a model would read as something other than text:
  ANSI CSI and OSC escape sequences (7-bit and 8-bit), every other C0/C1 control character
  except newline and tab, and the Unicode bidi embedding, override and isolate controls.
- ``safe(text)`` is both: what recall injects. The CLI prints ``clean`` text to a terminal;
  ``--json`` keeps the exact text (JSON escapes it).
"""

TAG = "quipu"  # quipu-memory, quipu-always-on and any tag quipu may add
_BRACKETS = frozenset("<\uff1c\ufe64\u2039\u3008\u2329\u27e8")
_SKIP = frozenset(" \t\r\n/\\\u00a0")
_NAME_NOISE = frozenset(" \t\r\n-_.\u00a0\u2010\u2011\u2012\u2013\u2014")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ESC = "\x1b"
_CSI8 = "\x9b"
_OSC8 = "\x9d"
_ST8 = "\x9c"
_STRING8 = frozenset("\x90\x98\x9d\x9e\x9f")  # 8-bit DCS, SOS, OSC, PM, APC: run to a terminator


def _is_tag(text: str, start: int) -> bool:
    """Whether the bracket at ``start`` begins a quipu tag (``</ quipu - Memory`` and the like)."""
    i = start + 1
    n = len(text)
    while i < n and text[i] in _SKIP:
        i += 1
    name: list[str] = []
    while i < n and len(name) < len(TAG):
        ch = text[i]
        if ch in _NAME_NOISE:
            i += 1
            continue
        if not ch.isalnum():
            break
        name.append(ch.casefold())
        i += 1
    return "".join(name) == TAG


def neutralise(text: str) -> str:
    if not any(ch in _BRACKETS for ch in text):
        return text
    out = []
    for i, ch in enumerate(text):
        out.append("&lt;" if ch in _BRACKETS and _is_tag(text, i) else ch)
    return "".join(out)


def _escape_end(text: str, i: int) -> int:
    """The index just past the escape sequence starting at ``i`` (an ESC or an 8-bit CSI/string)."""
    n = len(text)
    ch = text[i]
    if ch == _ESC:
        if i + 1 >= n:
            return n
        kind = text[i + 1]
        if kind == "[":
            ch, i = _CSI8, i + 1
        elif kind in "]PX^_":
            ch, i = _OSC8, i + 1
        else:
            return i + 2  # a two-character escape (ESC c, ESC 7, ...)
    if ch == _CSI8:
        j = i + 1
        while j < n and not ("\x40" <= text[j] <= "\x7e"):
            j += 1
        return min(j + 1, n)
    # OSC, DCS and friends: up to BEL, ST (ESC \) or the 8-bit ST.
    j = i + 1
    while j < n:
        if text[j] in "\x07" + _ST8:
            return j + 1
        if text[j] == _ESC:
            return j + 2 if j + 1 < n and text[j + 1] == "\\" else j
        j += 1
    return n


def unsafe(ch: str) -> bool:
    code = ord(ch)
    return (code < 32 and ch not in "\n\t") or 127 <= code < 160 or ch in _BIDI


def has_unsafe(text: str) -> bool:
    """Whether any character of ``text`` is ``unsafe``: every one of them is unprintable, so
    printable text (tabs and newlines aside) is answered without a look at each character."""
    if text.replace("\n", "").replace("\t", "").isprintable():
        return False
    return any(unsafe(ch) for ch in text)


def clean(text: str) -> str:
    if not has_unsafe(text):
        return text
    out = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == _ESC or ch == _CSI8 or ch in _STRING8:
            i = _escape_end(text, i)
            continue
        if not unsafe(ch):
            out.append(ch)
        i += 1
    return "".join(out)


def safe(text: str) -> str:
    return neutralise(clean(text))
