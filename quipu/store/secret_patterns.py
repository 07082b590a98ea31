"""The patterns of the secret rules: compiled at first use, and an alternation run as only the
alternatives that can match in a text.

Contract:
- ``Lazy(source)`` (and ``lazy``, typed as a compiled pattern) compiles on first use: importing the
  scanner compiles nothing, and a text runs (and compiles) only the rules whose keywords it holds.
- ``Anchored(head, alternatives, tail)`` is ``head (alt1|alt2|...) tail``; ``for_text(text)`` is
  that pattern with only the alternatives that can match somewhere in ``text``: those holding a
  literal (``literals``) the text holds, and those of which no literal is known. The literals a
  text holds are found in one pass over it (an Aho-Corasick automaton). An alternative left out
  cannot match anywhere in the text, so every match is the one of the whole alternation. ``head``
  and ``tail`` must match no characters (look-arounds, a group's brackets): the alternatives are
  first searched for bare, and a text in which none matches anywhere gets None. A caller that
  searched ``text.lower()`` for every word of ``lowered()`` in its own pass hands the words it
  found (``found``): each literal is then looked for as it is, without a pass of its own.
- ``Gate(source)`` is a search every match of a rule's pattern passes, run before the pattern:
  ``holds(text, low)`` is False only when the pattern cannot match in ``text`` (``low`` is
  ``text.lower()``). On ASCII text it searches ``low`` case-sensitively, else ``text`` ignoring case.
- ``literals(pattern)`` is literal text every match of ``pattern`` holds (any one of them), or ()
  when none is known, the most telling (the longest shortest one, then the fewest; none of one
  character) of: the starts every match has, spelled out through classes of a few letters and
  groups of plain alternatives (``gh[pousr]_`` is ``ghp_``, ``gho_``...; at most 16); the leading
  plain characters of each alternative of a leading group (``(?:AKIA|A3T[A-Z0-9])``); its longest
  run of plain characters outside any group (``[A-Fa-f0-9]{20,}NRAL``); the words of its first
  group of plain words with the plain characters right around it (``[a-z]{3}_(?:live|prod)_`` is
  ``_live_``, ``_prod_``). A pattern with inline flags or an alternation at its top level has none.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Set

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Lazy:
    """A regular expression compiled on its first use."""

    __slots__ = ("source", "flags", "_compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def for_text(self, text: str, found: Set[str] | None = None) -> re.Pattern[str] | None:
        """The pattern to run on ``text``."""
        return self.compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)


def lazy(source: str, flags: int = 0) -> re.Pattern[str]:
    """A ``Lazy`` pattern, used wherever a compiled one is."""
    return Lazy(source, flags)  # type: ignore[return-value]  # a Pattern in all but name


class Gate:
    """A search every match of a rule's pattern passes (a necessary condition, much cheaper than
    the pattern): ``holds(text, low)`` searches the lower-cased ``low`` as it is when ``text`` is
    ASCII, else ``text`` ignoring case. Its source is written in lower case, so on ASCII text the
    two are one search."""

    __slots__ = ("source", "_low", "_any")

    def __init__(self, source: str) -> None:
        self.source = source
        self._low: re.Pattern[str] | None = None
        self._any: re.Pattern[str] | None = None

    def holds(self, text: str, low: str) -> bool:
        if text.isascii():
            if self._low is None:
                self._low = re.compile(self.source)
            return self._low.search(low) is not None
        if self._any is None:
            self._any = re.compile(self.source, re.IGNORECASE)
        return self._any.search(text) is not None


class Anchored:
    """``head (alt1|alt2|...) tail`` run on a text as the alternatives that can match in it."""

    def __init__(self, head: str, alternatives: tuple[str, ...], tail: str,
                 known: "Mapping[str, tuple[str, ...]] | None" = None) -> None:
        """``known``: each alternative's ``literals`` worked out before (a table written at build
        time); an alternative it lacks is worked out here."""
        self.head, self.alternatives, self.tail = head, alternatives, tail
        known = known or {}
        self.anchors = tuple(known[a] if a in known else literals(a) for a in alternatives)
        self._compiled: dict[tuple[int, ...], tuple[re.Pattern[str], re.Pattern[str]]] = {}
        self._finder: Any = None  # each literal -> the alternatives it is found in, built at first use
        self._free = frozenset(i for i, anchors in enumerate(self.anchors) if not anchors)
        self._lowered: dict[str, list[tuple[str, frozenset[int]]]] | None = None

    def _chosen(self, text: str) -> tuple[int, ...]:
        if self._finder is None:
            import ahocorasick

            self._finder = ahocorasick.Automaton()
            for anchor, alternatives in self._where().items():
                self._finder.add_word(anchor, alternatives)
            self._finder.make_automaton()
        return tuple(sorted(self._free.union(*(alternatives for _end, alternatives in self._finder.iter(text)))))

    def lowered(self) -> dict[str, list[tuple[str, frozenset[int]]]]:
        """Each literal in lower case -> (the literal, the alternatives it is found in)."""
        if self._lowered is None:
            self._lowered = {}
            where = self._where()
            for anchor in sorted(where):
                self._lowered.setdefault(anchor.lower(), []).append((anchor, where[anchor]))
        return self._lowered

    def _where(self) -> dict[str, frozenset[int]]:
        """Each literal -> the alternatives it is a literal of."""
        where: dict[str, set[int]] = {}
        for i, anchors in enumerate(self.anchors):
            for anchor in anchors:
                where.setdefault(anchor, set()).add(i)
        return {anchor: frozenset(found) for anchor, found in where.items()}

    def _chosen_from(self, text: str, found: Set[str]) -> tuple[int, ...]:
        lowered = self.lowered()
        picked = set(self._free)
        for word in found:
            for anchor, alternatives in lowered.get(word, ()):
                if anchor in text:
                    picked |= alternatives
        return tuple(sorted(picked))

    def for_text(self, text: str, found: Set[str] | None = None) -> re.Pattern[str] | None:
        """``found``: the caller's one pass over ``text.lower()`` found these words, among them every
        literal of ``lowered()`` it holds (a literal in ``text`` is, lower-cased, in ``text.lower()``):
        each is then looked for as it is, and no pass of its own is made."""
        chosen = self._chosen(text) if found is None else self._chosen_from(text, found)
        if not chosen:
            return None
        if chosen not in self._compiled:
            either = "|".join(self.alternatives[i] for i in chosen)
            self._compiled[chosen] = (re.compile(either), re.compile(self.head + either + self.tail))
        bare, whole = self._compiled[chosen]
        # The head and the tail match no characters: a match of the whole is one of the bare
        # alternatives at the same place, and the bare search (no look-behind tried at each
        # character) finds no match in most texts.
        return whole if bare.search(text) is not None else None


_QUANTIFIER = re.compile(r"(?:[?*+]|\{\d*(?:,\d*)?\})[?+]?")


def literals(pattern: str) -> tuple[str, ...]:
    """Literal text every match of ``pattern`` holds (any one of them), or () (see the contract)."""
    if re.search(r"\(\?[a-zA-Z-]+[):]", pattern) or len(_top_split(pattern)) != 1:
        return ()  # inline flags (case-insensitive, scoped or not), or alternatives: no literal is sure
    found: list[tuple[str, ...]] = [_starts(pattern)]
    if pattern.startswith("(?:"):
        end = _group_end(pattern, 0)
        if end is not None and not re.match(r"[?*{]", pattern[end + 1:end + 2]):
            starts = [_leading(a) for a in _top_split(pattern[3:end])]
            if starts and all(starts):
                found.append(tuple(dict.fromkeys(starts)))
    lead = _leading(pattern)
    run, group = _longest_run(pattern)
    found += [(lead,), (run,) if len(run) >= 2 else (), group if min(map(len, group), default=0) >= 3 else ()]
    # The most telling: the longest shortest literal (a rare one), then the fewest; none of one character.
    return max((f for f in found if f and min(map(len, f)) >= 2), key=lambda f: (min(map(len, f)), -len(f)), default=())


_PLAIN_ESCAPES = (".", "-", "$", "/", "~")
_MOST_STARTS = 16


def _plain(text: str) -> str | None:
    """``text`` read as plain characters (an escaped dot as a dot), or None when it holds anything else."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text[i + 1:i + 2] in _PLAIN_ESCAPES:
            ch, i = text[i + 1], i + 1
        elif ch in "\\[](){}?*+|.^$":
            return None
        out.append(ch)
        i += 1
    return "".join(out)


def _starts(pattern: str) -> tuple[str, ...]:
    """The texts one of which every match starts with: its leading plain characters, a class of a
    few letters or digits (``[sr]k_``), a group of plain alternatives (``gl(?:pat|dt)-``), each
    spelled out (at most ``_MOST_STARTS``), up to the first thing that may be absent or repeated."""
    outs, i = [""], 0
    while i < len(pattern):
        ch = pattern[i]
        options: tuple[str, ...] | None = None
        if ch == "[":
            end = _class_end(pattern, i)
            body = pattern[i + 1:end] if end is not None else ""
            if end is not None and body and all(c.isalnum() or c == "_" for c in body):
                options, i = tuple(dict.fromkeys(body)), end + 1
        elif pattern.startswith("(?:", i):
            end = _group_end(pattern, i)
            words = [_plain(w) for w in _top_split(pattern[i + 3:end])] if end is not None else []
            if end is not None and words and all(words):
                options, i = tuple(dict.fromkeys(w for w in words if w)), end + 1
        elif (plain := _plain(pattern[i:i + 2] if ch == "\\" else ch)) is not None:
            options, i = (plain,), i + (2 if ch == "\\" else 1)
        if options is None or len(outs) * len(options) > _MOST_STARTS:
            break
        quantified = _QUANTIFIER.match(pattern, i)
        if quantified and not quantified.group().startswith("+"):
            break  # this part may be absent, or repeated: the starts end before it
        outs = [o + x for o in outs for x in options]
        if quantified:
            break  # at least once: the starts hold it, and end after it
    return tuple(outs) if all(outs) else ()


def _leading(pattern: str) -> str:
    """The plain characters every match of ``pattern`` starts with."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch, step = pattern[i], 1
        if ch == "\\":
            if pattern[i + 1:i + 2] not in (".", "-", "$", "/", "~"):
                break
            ch, step = pattern[i + 1], 2
        elif ch in "[](){}?*+|.^$":
            break
        after = pattern[i + step:i + step + 1]
        if after in ("?", "*", "{"):
            break  # this character may be absent or repeated: the anchor ends before it
        out.append(ch)
        i += step
        if after == "+":
            break
    return "".join(out)


def _longest_run(pattern: str) -> tuple[str, tuple[str, ...]]:
    """The longest run of plain characters, each once and in order, of every match (outside groups),
    and the alternatives of its first group of plain words that every match holds (or ())."""
    best, run, i = "", "", 0
    group: tuple[str, ...] = ()
    while i < len(pattern):
        ch = pattern[i]
        lit: str | None = None
        if ch == "\\":
            escaped = pattern[i + 1:i + 2]
            lit = None if escaped.isalnum() or not escaped else escaped  # \d \w \b ...: no literal
            i += 2
        elif ch == "[":
            end = _class_end(pattern, i)
            if end is None:
                return "", ()
            i = end + 1
        elif ch == "(":
            end = _group_end(pattern, i)
            if end is None:
                return "", ()
            words = _top_split(pattern[i + 3:end]) if pattern.startswith("(?:", i) else []
            if not group and words and all(w.isalnum() for w in words) and not _QUANTIFIER.match(pattern, end + 1):
                after = _leading(pattern[end + 1:])  # the plain characters right around it, in every match too
                group = tuple(run + w + after for w in words)
            i = end + 1
        elif ch == "|" or ch in ")]{}?*+":
            return "", ()  # an alternation at the top level, or something not understood
        else:
            lit = None if ch in ".^$" else ch
            i += 1
        quantified = _QUANTIFIER.match(pattern, i)
        if quantified:
            i = quantified.end()
            if lit is not None and quantified.group().startswith("+"):
                run += lit  # at least once: the run holds it, and ends after it
            best, run = max(best, run, key=len), ""
        elif lit is None:
            best, run = max(best, run, key=len), ""
        else:
            run += lit
    return max(best, run, key=len), group


def _class_end(pattern: str, i: int) -> int | None:
    j = i + 1
    j += pattern[j:j + 1] == "^"
    j += pattern[j:j + 1] == "]"
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
        elif pattern[j] == "]":
            return j
        else:
            j += 1
    return None


def _group_end(pattern: str, i: int) -> int | None:
    """The index of the ``)`` closing the group opened at ``i``."""
    depth, j = 0, i
    while j < len(pattern):
        ch = pattern[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[":
            end = _class_end(pattern, j)
            if end is None:
                return None
            j = end
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None


def _top_split(pattern: str) -> list[str]:
    """``pattern``'s alternatives at its top level."""
    parts, start, j = [], 0, 0
    while j < len(pattern):
        ch = pattern[j]
        if ch == "\\":
            j += 2
            continue
        if ch in "[(":
            end = _class_end(pattern, j) if ch == "[" else _group_end(pattern, j)
            if end is None:
                return []
            j = end
        elif ch == "|":
            parts.append(pattern[start:j])
            start = j + 1
        j += 1
    return [*parts, pattern[start:]]
