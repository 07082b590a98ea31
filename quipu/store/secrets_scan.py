"""Finding and redacting things that look like secrets, so nothing quipu writes puts one in git.

Contract:
- ``find_secrets(text)`` returns every span that looks like a credential, as ``Secret(kind,
  start, end)`` sorted by position, overlapping spans merged. Three layers: detect-secrets'
  provider plugins and keyword detector (run on every line, as a config file and as code;
  placeholders such as ``<your-password>``, ``${VAR}`` or ``os.environ[...]`` are not secrets);
  quipu's own shapes of common keys (Anthropic/OpenAI ``sk-...``, GitHub ``ghp_...``, AWS
  ``AKIA...`` and 40-character secret access keys, Slack, Stripe, Google ``AIza...``), JWTs,
  PEM private keys and their base64, passwords inside URLs, ``password=...``-style assignments
  and ``.env`` lines; passwords in prose in English, German, French, Spanish, Portuguese,
  Italian, Dutch, Russian and Turkish ("the VPN password is blue-Falcon-93"); and long tokens
  of high Shannon entropy.
- ``redact(text)`` replaces each span with ``[REDACTED:<kind>]``; the result never contains the
  matched characters, so it is safe to log.
- ``redact_values(value)`` redacts every string of a JSON-like value (event files use it).
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
from collections.abc import Mapping
from typing import Any, NamedTuple

from quipu.errors import SecretRefused


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
    ("url-password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s/:@'\"<>]*:[^\s/@'\"<>]+@")),
    ("aws-secret-key", re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[0-9])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])"
                                  r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")),
    ("private-key", re.compile(r"\bLS0tLS1CRUdJTi[A-Za-z0-9+/=]{8,}")),  # base64 of "-----BEGIN"
    ("env-secret", re.compile(
        r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|PWD|SECRET|TOKEN|API_?KEY|PRIVATE_KEY|CREDENTIALS?)"
        r"[A-Z0-9_]*\s*=\s*['\"]?(?![$<{]|~?/|x{4})[^\s'\"]{6,}")),
    ("redis-password", re.compile(r"(?i)\b(?:requirepass|masterauth)\s+['\"]?[^\s'\"]{4,}")),
    ("cli-password", re.compile(r"\bmysql(?:dump|admin)?\b[^\n]*?\s-p(?!\s)[^\s'\"]{4,}")),
    ("assignment", re.compile(
        r"(?i)\b(?:api[_\-]?key|secret(?:[_\-]?key)?|access[_\-]?token|auth[_\-]?token|token|password|passwd|pwd)"
        r"\s*[:=]\s*['\"]?(?=[^\s'\"]*[0-9])[^\s'\"]{8,}")),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=]{20,}")),
)

# A password in prose: the word for it, up to three words ("for the NAS"), a verb or a colon, the
# value; or the word right before a value that is plainly not a word ("db password hunter2-Zebra!").
_PASSWORD_WORD = (r"(?:pass(?:word|wd|phrase|code)s?|pwd|passwort|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|senha"
                  r"|wachtwoord|пароль|şifre(?:si)?|sifre(?:si)?|parola|has(?:ł|l)o|lösenord)")
_VERB = (r"(?:is|was|now|=|:|—|-|ist|lautet|war|est|était|es|era|é|è|à|is\s+now|to|jest|är|равен|—|:)")
_PROSE = re.compile(
    rf"(?i)(?<![\w$])(?:{_PASSWORD_WORD})(?:\s+[^\s:=]+){{0,4}}?\s*(?:{_VERB}\s*)+[«“\"'\s]*(?P<value>[^\s\"'»”]{{4,}})"
    rf"|(?<![\w$])(?:{_PASSWORD_WORD})\s+(?P<bare>[^\s\"'»”]{{8,}})"
    rf"|\b(?:login|credentials?|user(?:name)?)\s+(?:is\s+|are\s+)?[\w.@\-]+\s*/\s*(?P<pair>[^\s\"'»”]{{6,}})")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[<\[{(].*|\$.*|%\(.*|.*\{\{.*|x{3,}.*|\*{3,}.*|\.{3}.*|~?/.*|\.\.?/.*|https?://\S*)$"
    r"|os\.(?:environ|getenv)|getenv\(|process\.env|environ\[|\bexample\b|placeholder|your[_\-]|redacted|changeme"
    r"|\bdummy\b|\bsample\b|^(?:1password|lastpass|bitwarden|keepass)|^password$|^secret$|^none$|^null$|^true$|^false$")


def _secretish(value: str) -> bool:
    """A value that reads like a password, not like a word or a placeholder."""
    value = value.rstrip(".,;:!?)»”'\"") if not value.endswith("!") or len(value) < 5 else value.rstrip(".,;:?)»”'\"")
    if len(value) < 6 or _PLACEHOLDER.search(value):
        return False
    letters = [c for c in value if c.isalpha()]
    digits = sum(c.isdigit() for c in value)
    symbols = sum(not c.isalnum() for c in value)
    inner_upper = any(c.isupper() for c in value[1:])
    if not letters and digits:
        return False  # a number: a port, a count, a year
    return digits > 0 and (bool(letters) or symbols > 0) or symbols > 0 and (inner_upper or digits > 0) or (
        inner_upper and any(c.islower() for c in value) and len(value) >= 10)


def _prose_spans(text: str) -> list[Secret]:
    out = []
    for m in _PROSE.finditer(text):
        group = next(name for name in ("value", "bare", "pair") if m.group(name))
        if _secretish(m.group(group)):
            out.append(Secret("password", m.start(group), m.end(group)))
    return out


_DETECT_SECRETS: list[Any] | None = None
# detect-secrets' plugins that find credentials (not its entropy plugins, which flag hashes and
# commit ids quipu's own entropy rule knows to leave alone, nor the public-IP one).
_SKIPPED_PLUGINS = ("Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector")


def _plugins() -> list[Any]:
    global _DETECT_SECRETS
    if _DETECT_SECRETS is None:
        from detect_secrets.core.plugins.util import (
            get_mapping_from_secret_type_to_class,
        )

        plugins: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())  # secret type -> plugin class
        _DETECT_SECRETS = [cls() for cls in plugins.values() if cls.__name__ not in _SKIPPED_PLUGINS]
    return _DETECT_SECRETS


def _library_spans(text: str) -> list[Secret]:
    """Spans detect-secrets reports, line by line, read as a config file and as plain text."""
    out: list[Secret] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if len(line.strip()) >= 8:
            for plugin in _plugins():
                for filename in ("memory.yaml", "memory"):
                    for found in plugin.analyze_line(filename=filename, line=line, line_number=1):
                        value = (found.secret_value or "").strip()
                        where = line.find(value) if value else -1
                        if where < 0 or (found.type == "Secret Keyword" and not _keyword_value(value)):
                            continue
                        out.append(Secret(_KIND.get(found.type, "credential"), offset + where, offset + where + len(value)))
        offset += len(line)
    return out


def _keyword_value(value: str) -> bool:
    """A value after ``password =``-like keywords that is a secret, not code or a placeholder."""
    first = value.split()[0].strip("'\"") if value.split() else ""
    return len(first) >= 6 and not _PLACEHOLDER.search(first) and not any(c in first for c in "()[]")


_KIND = {"Secret Keyword": "assignment", "AWS Access Key": "aws-key", "Private Key": "private-key",
         "JSON Web Token": "jwt", "Basic Auth Credentials": "url-password"}


# Candidate tokens for the entropy rule: runs of the characters keys are made of.
_TOKEN_RE = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")
_UUID_RE = re.compile(r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_HEX_RE = re.compile(r"\A[0-9a-fA-F]+\Z")
_DIGEST_BEFORE = re.compile(r"(?i)(?:sha-?(?:256|512)|digest)[:=\s]*\Z")  # an image or file digest
_PATH_PART = re.compile(r"\A[A-Za-z]?[a-z0-9._\-]*\Z")
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
    if "/" in core and not any(c in core for c in "+=") and all(_PATH_PART.match(p) for p in core.split("/")):
        return False  # a path fragment such as src/api/v2/orders (no capital inside a part)
    # A random part between separators, or a long token that is random as a whole.
    if any(_looks_random(part) for part in re.split(r"[-_.]", core)):
        return True
    if len(core) >= 40 and shannon_entropy(core) >= 4.5 and mixing(core) >= 0.4:
        return True  # base64 of text: few digits, but random-looking case changes throughout
    return (len(core) >= 32 and shannon_entropy(core) >= 4.3 and sum(c.isdigit() for c in core) >= 3
            and mixing(core) >= 0.45)


def find_secrets(text: str) -> list[Secret]:
    spans: list[Secret] = []
    for kind, pattern in _PATTERNS:
        spans += [Secret(kind, m.start(), m.end()) for m in pattern.finditer(text)]
    for m in _TOKEN_RE.finditer(text):
        if _is_high_entropy(m.group()) and not _DIGEST_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
            spans.append(Secret("high-entropy", m.start(), m.end()))
    spans += _prose_spans(text)
    spans += _library_spans(text)
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


def redact_values(value: Any) -> Any:
    """``value`` (JSON-like) with every string in it redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_values(v) for v in value]
    return value


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


def refuse_secrets(changes: Mapping[str, bytes | None], message: str) -> None:
    """Raise ``SecretRefused`` when a file of a commit, or its message, holds a secret."""
    for rel, data in [*changes.items(), ("the commit message", message.encode("utf-8"))]:
        if data is None:
            continue
        spans = find_secrets(data.decode("utf-8", "replace"))
        if spans:
            kinds = ", ".join(sorted({s.kind for s in spans}))
            raise SecretRefused(
                f"refusing to commit {rel}: it looks like it holds a secret ({kinds}); nothing was committed\n"
                "- keep the secret in a secret manager and write down where it lives, not its value"
            )
