"""The one secret scanner: every text quipu writes to a store, a commit or the archive goes through it.

Contract:
- ``find_secrets(text, allow=())`` returns every span that looks like a credential, as
  ``Secret(kind, start, end)`` sorted by position, overlapping spans merged; ``kind`` is the
  rule that fired (see ``quipu.store.secret_rules``: provider tokens, keys beside a credential
  word, assignments, URLs, private keys, command-line password flags, passwords in prose in 30+
  languages, pass and seed phrases, recovery codes, random tokens; a value stated for a password
  or passphrase word, and for a secret, token, API key or PIN (``stated-secret``), is one when
  it reads like a credential, with or without a digit: ``quipu.store.secret_prose``). A rule
  named in ``allow`` is skipped, and so is every finding on a line that carries the inline marker
  ``quipu:allow-secret`` (like ``gitleaks:allow``).
- A cheap pre-filter runs first: a text with none of the rules' keywords and no run of 15+
  characters without a space (most prose) is answered without running any pattern
  (``may_hold_secret`` is that test, and a necessary condition of a finding). The keywords are
  found in one pass over the lower-cased text (an Aho-Corasick automaton, ``pyahocorasick``), and
  only the rules whose keywords it found run: the cost of a text does not grow with the number of
  rules. Patterns compile at their first use (importing the scanner compiles none), and of the
  provider-token rule only the families whose literals a text holds (``secret_patterns.Anchored``); what is found is
  exactly what the whole rule set finds. ``find_secrets_many(texts)`` searches many texts (an
  archived session's turns) in one pass and scans only those with a keyword or a long run.
- ``warm()`` compiles now what a text holding every keyword runs, and loads the lexicon a stated
  password is read against (the command server calls it).
- ``redact(text)`` replaces each span with ``[REDACTED:<kind>]``; the result never contains the
  matched characters, so it is safe to log or archive. ``redact_values(value)`` redacts every
  string of a JSON-like value (event files use it).
- ``refuse_secrets(changes, message, allow)`` raises ``SecretRefused`` naming the rule, the file,
  line and field, and the offending span masked (``gh…(40 chars)`` of a provider token; of any
  other secret, a password above all, its length alone: ``…(16 chars)``); it returns the allowed
  rules that were actually used, for the commit's ``Quipu-Allowed-Secret-Like`` trailer.
- Measured by bench/bench_secrets.py on a corpus of 270+ secret forms and 180+ look-alikes.
"""
from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Collection, Mapping, Sequence

import ahocorasick

from quipu.errors import SecretRefused
from quipu.store import secret_prose, secret_rules
from quipu.store.secret_patterns import Anchored
from quipu.lite import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ALLOW_MARKER = "quipu:allow-secret"
shannon_entropy = secret_rules.entropy
_TOKEN_RE = re.compile(r"[A-Za-z0-9+/=_\-.~]{20,}")
# Certificates and public keys: their base64 is random, and public.
_PUBLIC_BLOCK = re.compile(r"-----BEGIN ((?:(?!PRIVATE)[A-Z0-9 ])+)-----.*?(?:-----END \1-----|\Z)", re.DOTALL)


class Secret(NamedTuple):
    kind: str
    start: int
    end: int


# Every rule's keywords: a text with none of them and no long run of characters is no secret.
_KEYWORDS = tuple(dict.fromkeys([*(k for r in secret_rules.RULES for k in r.keywords), *secret_prose.KEYWORDS, "echo"]))


def _automaton(words: Collection[str]) -> Any:
    found = ahocorasick.Automaton()
    for word in words:
        found.add_word(word, word)
    found.make_automaton()
    return found


# The provider tokens' literals, lower-cased, are found in the same pass (``secret_patterns.Anchored``).
_ANCHORED = tuple(rule.pattern for rule in secret_rules.RULES if isinstance(rule.pattern, Anchored))
_LITERALS = frozenset(word for anchored in _ANCHORED for word in anchored.lowered()) - frozenset(_KEYWORDS)
_FINDER = _automaton([*_KEYWORDS, *sorted(_LITERALS)])
_UNKEYED = tuple(n for n, rule in enumerate(secret_rules.RULES) if not rule.keywords)  # they run on a long run
_RULES_OF: dict[str, list[int]] = {}  # keyword -> the rules (by position) it lets run
for _n, _rule in enumerate(secret_rules.RULES):
    for _word in _rule.keywords:
        _RULES_OF.setdefault(_word, []).append(_n)
_PROSE, _STATED, _PAIR, _CODE = (frozenset(k) for k in (secret_prose.PROSE_KEYWORDS, secret_prose.STATED_KEYWORDS,
                                                         secret_prose.PAIR_KEYWORDS, secret_prose.CODE_KEYWORDS))


def _keywords_in(low: str) -> set[str]:
    """The keywords ``low`` holds, anywhere (inside other words too), and the lower-cased literals
    of the provider tokens, in one pass."""
    return {word for _end, word in _FINDER.iter(low)}




_RUN = re.compile(r"\S{%d}" % secret_rules.MIN_RUN)  # \S is what str.split() does not split on


def _long_run(low: str) -> bool:
    """Whether ``low`` has a run of ``MIN_RUN`` characters without a space."""
    return _RUN.search(low) is not None


def may_hold_secret(text: str) -> bool:
    """False only when no rule can match ``text``: the pre-filter, one pass over lower-cased text."""
    low = text.lower()
    return _long_run(low) or not _LITERALS.issuperset(_keywords_in(low))


def _spans(text: str, low: str, present: set[str], long_run: bool) -> list[Secret]:
    out: list[Secret] = []
    due = {n for word in present for n in _RULES_OF.get(word, ())}
    for n in sorted(due.union(_UNKEYED) if long_run else due):  # in the rules' order, as they are listed
        rule = secret_rules.RULES[n]
        if rule.gate is not None and not rule.gate.holds(text, low):
            continue
        pattern = rule.pattern.for_text(text, present)  # compiled at first use, of the prefixes the text holds
        if pattern is None:
            continue
        for m in pattern.finditer(text):
            group = "value" if "value" in pattern.groupindex and m.group("value") is not None else 0
            if rule.skip_name is not None and rule.skip_name.search(m.group("name")):
                continue
            if "name" in pattern.groupindex and m.group("name") and len(m.group(group)) >= 4 and (
                    m.group(group).strip("'\"").lower() in m.group("name").lower()):
                continue  # POSTGRES_PASSWORD=postgres: the value is a word of the name
            if rule.check is None or rule.check(m.group(group)):
                out.append(Secret(rule.name, m.start(group), m.end(group)))
    out += [Secret("cli-password", s, e) for s, e in secret_rules.echo_spans(text)] if "echo" in present else []
    if not _PROSE.isdisjoint(present):
        out += [Secret("password-prose", s, e) for s, e in secret_prose.prose_spans(text)]
    if not _STATED.isdisjoint(present):
        out += [Secret("stated-secret", s, e) for s, e in secret_prose.stated_spans(text)]
    if not _PAIR.isdisjoint(present):
        out += [Secret("password-pair", s, e) for s, e in secret_prose.pair_spans(text)]
    if not _CODE.isdisjoint(present):
        out += [Secret("recovery-code", s, e) for s, e in secret_prose.code_spans(text)]
    if long_run:
        public = [(m.start(), m.end()) for m in _PUBLIC_BLOCK.finditer(text)] if "-----begin" in low else []
        for m in _TOKEN_RE.finditer(text):
            if (secret_rules.random_token(m.group(), text[max(0, m.start() - 24):m.start()])
                    and not any(a <= m.start() < b for a, b in public)):
                out.append(Secret("high-entropy", m.start(), m.end()))
    return out


def _allowed_lines(text: str) -> list[tuple[int, int]]:
    out = []
    pos = 0
    for line in text.splitlines(keepends=True):
        if ALLOW_MARKER in line:
            out.append((pos, pos + len(line)))
        pos += len(line)
    return out


_REDACTED = re.compile(r"\[REDACTED:[a-z\-]+\]")


def warm() -> None:
    """Compile the patterns every rule runs on a text with its keywords now, and load the lexicon
    a stated password is read against, not at a first use (a long-lived process, before it forks
    the children that scan)."""
    texts = (" ".join(_KEYWORDS) + " a1B2c3D4e5F6g7H8i9J0k1L2m3N4", "plain words in a note: nothing to find",
             "build 20261205061532123456 failed: the password step", "café: build 20261205061532123456, password",
             "the password is Kqpzrwtbxm")  # the lexicon and its letter pairs (``secret_prose.stated_secret``)
    for text in texts:
        find_secrets(text)


def find_secrets(text: str, allow: Collection[str] = (), *, marker: bool = False) -> list[Secret]:
    if "[REDACTED:" in text:  # what redact wrote is no secret, and its rule name no password word
        text = _REDACTED.sub(lambda m: "[" + "_" * (len(m.group()) - 2) + "]", text)
    low = text.lower()
    return _found(text, low, _keywords_in(low), _long_run(low), allow, marker=marker)


def _found(text: str, low: str, present: set[str], long_run: bool, allow: Collection[str] = (), *,
           marker: bool = False) -> list[Secret]:
    """``find_secrets`` of a text with no ``[REDACTED:`` in it, its keywords and long run known."""
    if not long_run and _LITERALS.issuperset(present):
        return []  # no keyword (a literal of a provider token counts only with a long run)
    spans = [s for s in _spans(text, low, present, long_run) if s.kind not in allow and s.end > s.start]
    if marker and ALLOW_MARKER in text:
        lines = _allowed_lines(text)
        spans = [s for s in spans if not any(a <= s.start < b for a, b in lines)]
    spans.sort(key=lambda s: (s.start, -s.end))
    merged: list[Secret] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Secret(last.kind, last.start, max(last.end, span.end))
        else:
            merged.append(span)
    return merged


# Bytes to b" " (ASCII whitespace) or b"x" (anything else, and every byte of a non-ASCII character).
_RUNS = bytes(32 if chr(b).isspace() and b < 128 else 120 for b in range(256))


def find_secrets_many(texts: Sequence[str]) -> list[list[Secret]]:
    """``find_secrets`` of each text: the keywords and the long runs are searched once over all
    the texts joined (so a text with neither, most prose, costs no call of its own), and only the
    texts with one are scanned. Long runs are looked for in the UTF-8 bytes with every
    non-whitespace byte made one letter (a few ``find`` calls over the whole batch): a run of
    ``MIN_RUN`` bytes there is only a candidate (a non-ASCII character is several bytes, non-ASCII
    whitespace counts as a letter), so a text is scanned whenever it holds a long run, and
    ``find_secrets`` decides."""
    lows = [t.lower() for t in texts]
    joined = "\n".join(lows)  # no keyword holds a line break, and it ends every run
    ends = list(itertools.accumulate(len(low) + 1 for low in lows))
    keywords: dict[int, set[str]] = {}  # each text's keywords, as _keywords_in finds them (none holds a line break)
    for end, word in _FINDER.iter(joined):
        keywords.setdefault(bisect.bisect_right(ends, end), set()).add(word)
    due = set(keywords)
    encoded = [low.encode("utf-8", "surrogatepass") for low in lows]
    byte_ends = list(itertools.accumulate(len(b) + 1 for b in encoded))
    letters = b"\n".join(encoded).translate(_RUNS)
    run = b"x" * secret_rules.MIN_RUN
    at = letters.find(run)
    while at >= 0:
        n = bisect.bisect_right(byte_ends, at)
        due.add(n)
        at = letters.find(run, byte_ends[n]) if n < len(byte_ends) else -1
    return [[] if n not in due else find_secrets(text) if "[REDACTED:" in text
            else _found(text, lows[n], keywords.get(n, set()), _long_run(lows[n])) for n, text in enumerate(texts)]


def has_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact_values(value: Any) -> Any:
    """``value`` (JSON-like) with every string in it redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_values(v) for v in value]
    return value


def redact(text: str, spans: list[Secret] | None = None) -> str:
    """``text`` with every secret-looking span replaced by ``[REDACTED:<kind>]`` (``spans``:
    ``find_secrets(text)``, when the caller has it already)."""
    out: list[str] = []
    pos = 0
    for span in find_secrets(text) if spans is None else spans:
        out.append(text[pos:span.start])
        out.append(f"[REDACTED:{span.kind}]")
        pos = span.end
    out.append(text[pos:])
    return "".join(out)


# A provider token's or a key block's first characters name its kind (``ghp_``, ``-----BEGIN``), and
# are the same in every one; of any other secret (a password a person chose) none is shown.
_PREFIXED = frozenset({"provider-token", "private-key"})


def mask(value: str, kind: str = "provider-token") -> str:
    """A span shown without giving it away: its length, after the first characters (a prefix at
    most) of a provider token or a private key."""
    keep = min(4, len(value) // 6) if kind in _PREFIXED else 0
    return f"{value[:keep]}…({len(value)} chars)"


def describe(text: str, span: Secret) -> str:
    """Where a span is: its line, and the frontmatter field when the line is ``field: ...``."""
    line_no = text.count("\n", 0, span.start) + 1
    line = text[text.rfind("\n", 0, span.start) + 1:span.start]
    field = re.match(r"\s*(?:-\s+)?([A-Za-z_][\w\-]*):", line)
    where = f"line {line_no}" + (f" ({field.group(1)})" if field and line_no > 1 else "")
    return f"{span.kind} at {where}: {mask(text[span.start:span.end], span.kind)}"


def refuse_secrets(changes: Mapping[str, bytes | None], message: str, allow: Collection[str] = (), *,
                   marker: bool = False) -> list[str]:
    """Raise ``SecretRefused`` when a file of a commit, or its message, holds a secret. ``marker``:
    a line carrying the inline marker is vouched for (only text a person wrote and is committing
    themselves: someone else's text, a transcript or a model's words, may carry the marker too).

    Returns the rules in ``allow`` that did suppress a finding (for the commit's trailer)."""
    used: set[str] = set()
    for rel, data in [*changes.items(), ("the commit message", message.encode("utf-8"))]:
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        spans = find_secrets(text, allow, marker=marker)
        if (allow or (marker and ALLOW_MARKER in text)) and not spans:
            everything = find_secrets(text)
            used |= {s.kind for s in everything} & set(allow)
            used |= {ALLOW_MARKER} if {s.kind for s in everything} - set(allow) else set()
        if spans:
            found = "; ".join(describe(text, s) for s in spans[:3]) + (f"; and {len(spans) - 3} more" if len(spans) > 3 else "")
            rules = ",".join(sorted({s.kind for s in spans}))
            raise SecretRefused(
                f"refusing to commit {rel}: it looks like it holds a secret ({found}); nothing was committed\n"
                "- keep the secret in a secret manager and write down where it lives, not its value\n"
                f"- if it is not a secret, vouch for it with `--allow-secret-like {rules}` "
                f"or put `{ALLOW_MARKER}` on its line"
            )
    return sorted(used)
