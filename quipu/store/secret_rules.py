"""The rules of the secret scanner: what a credential looks like, in code, config, shells and prose.

Contract:
- ``RULES`` is a tuple of ``Rule(name, keywords, pattern, check, skip_name)``. A rule runs only
  on a text that holds one of its ``keywords`` (lower case) or, for a rule with none, a run of
  ``MIN_RUN``+ characters without a space: that is the cheap pre-filter, a necessary condition of
  every rule. A rule's ``gate`` (a cheap search every match of it passes) runs before its
  pattern. Passwords in prose, account pairs and recovery codes are in ``secret_prose``. A match's ``value`` group (or the whole match) is the
  secret's span; ``check(value)`` may reject it (a placeholder, a word, a hash).
- The families follow the rule lists of gitleaks and trufflehog: provider tokens by their own
  prefixes; keys shaped like ordinary identifiers (hex, UUIDs, base32 seeds) only beside a word
  that names a credential ("api key", "token", "TOTP seed") or a service ("heroku: <uuid>"),
  and not when an id word stands between ("the heroku app id is <uuid>"); ``KEY=value`` assignments in code, config and ``.env`` files; URLs
  and connection strings with a password; PEM private keys and JWTs; password flags of common
  command lines (``sshpass -p``, ``curl -u user:pass``, ``redis-cli -a``, ``-passin pass:``...,
  and ``-p V`` beside ``-u``/``--user`` in any command when V reads like a password);
  passwords told in prose in 30+ languages; diceware and seed phrases; recovery codes; 1Password
  secret keys; and random mixed-case tokens (``entropy``).
- Not secrets: hashes and commit ids, UUIDs and ULIDs on their own, public keys and
  certificates, data URIs, integrity strings, documented example keys (``...EXAMPLE``),
  variable names and references (``process.env.X``, ``${X}``, ``<your-token>``).
"""
from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable
from quipu.lite import NamedTuple
from quipu.store import secret_literals
from quipu.store.secret_patterns import Anchored, Gate, Lazy, lazy


class Rule(NamedTuple):
    name: str
    keywords: tuple[str, ...]
    pattern: Lazy | Anchored
    check: Callable[[str], bool] | None = None
    skip_name: re.Pattern[str] | None = None  # the match's ``name`` group that makes it no secret
    gate: Gate | None = None  # a search every match passes, run first (``secret_patterns.Gate``)


def keyword_of(phrase: str) -> str:
    """The keyword of a phrase a rule matches word for word: its longest word. Every match holds
    it, and a long word is rare in prose where a short one is not ("relic" of "new relic", not
    "new"; "passe" of "mot de passe", not "mot")."""
    return max(phrase.split(), key=len)


MIN_RUN = 15  # the shortest provider token a prefix rule knows, and the entropy rule's shortest candidate

_PLACEHOLDER = lazy(
    r"(?i)^(?:[<\[{(].*|\$.*|%\(.*|%[a-z_][a-z0-9_]*%|.*\{\{.*|.*x{4,}.*|\*{3,}.*|\.{3}.*|….*|~?/.*|\.\.?/.*|https?://\S*)$"
    r"|os\.(?:environ|getenv)|getenv\(|process\.env|environ\[|import\.meta\.env|\benv\.|\bENV\[|secrets\.|placeholder"
    r"|your[_\-]|redacted|^![a-z_]+$"
    r"|example|changeme|\bdummy\b|\bsample\b|\bfake\b|^(?:1password|lastpass|bitwarden|keepass|keychain|vault)\b"
    r"|^(?:password|passwd|secret|token|none|null|true|false|required|optional|string|str|hidden|empty|root|guest"
    r"|admin|test|user|pass|postgres|mysql|redis|await|new|undefined|nil|self|this|function|lambda|async|yield"
    r"|require|import|bearer|basic|\*+)$")
_IDENTIFIER = lazy(r"^[A-Za-z_][A-Za-z_]*(?:[.\-][A-Za-z_]+)*(?:\(.*\)?)?[:;,]?$")
_CALL = lazy(r"[A-Za-z_][\w.]*\([^()]*\)?[;,]?$")  # get_secret("x"), bcrypt.hash(p)


def entropy(text: str) -> float:
    """Bits per character of ``text`` (0.0 for empty text)."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def _class(ch: str) -> str:
    return "d" if ch.isdigit() else "u" if ch.isupper() else "l" if ch.islower() else "s"


def mixing(text: str) -> float:
    """Share of neighbouring letters/digits that change class: ~0.6 random base62, ~0.1 identifiers."""
    chars = [c for c in text if c.isalnum()]
    if len(chars) < 2:
        return 0.0
    return sum(_class(a) != _class(b) for a, b in zip(chars, chars[1:], strict=False)) / (len(chars) - 1)


def clean(value: str) -> str:
    return value.strip().strip("\"'`«»“”„「」『』()[],;").rstrip(".:")


def not_placeholder(value: str) -> bool:
    v = clean(value)
    return len(v) >= 4 and not _PLACEHOLDER.search(v) and len(set(v)) > 2


def secretish(value: str) -> bool:
    """A value that reads like a password: not a word, a number, a path, code or a placeholder."""
    v = clean(value)
    if len(v) < 6 or not not_placeholder(v) or _CALL.match(v) or v.count("/") >= 2:
        return False
    if re.search(r"\\u[0-9a-fA-F]{4}", v):
        return False  # a JSON escape of a letter ("f\u00fcr"), not a password
    if v == v.lower() and re.fullmatch(r"[\w\-]+(?:\.[\w\-]+){2,}(?::\d+)?", v):
        return False  # a host name: 123456789012.dkr.ecr.eu-west-1.amazonaws.com
    letters = sum(c.isalpha() for c in v)
    digits = sum(c.isdigit() for c in v)
    symbols = len(v) - letters - digits
    inner_upper = any(c.isupper() for c in v[1:])
    if not letters:
        return False  # a number: a port, a count, a year
    return bool(digits and (letters >= 2 or symbols)) or bool(symbols and inner_upper) or (
        inner_upper and any(c.islower() for c in v) and len(v) >= 10 and not _IDENTIFIER.match(v))


def assigned(value: str) -> bool:
    """A value given to a credential name: a secret unless it is a reference, a call or a placeholder."""
    v = clean(value)
    if len(v) < 4 or not not_placeholder(v) or _CALL.match(value.strip()) or v.startswith(("-", "=")):
        return False
    if re.fullmatch(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+", v):
        return False  # an attribute: self.password, config.token
    return not re.fullmatch(r"[A-Z][A-Z0-9_]+|[a-z]+_[a-z_]+", v)  # another variable's name


_HEXISH = lazy(r"\A[0-9a-fA-F\-]+\Z")


def key_like(value: str) -> bool:
    """A token beside a credential word: long enough, and not a word, a path or a URL."""
    v = clean(value)
    if len(v) < 16 or not not_placeholder(v) or "://" in v or v.count("/") >= 3:
        return False
    if re.fullmatch(r"[A-Z2-7]{16,}=*|(?:[A-Z0-9]{4,6}-){3,}[A-Z0-9]{4,6}", v):
        return True  # a base32 seed; a recovery or licence key in groups
    parts = re.split(r"[-_.]", v)
    if (len(parts) >= 3 and all(re.fullmatch(r"[a-z]{1,12}\d{0,3}|\d{1,8}", p) for p in parts)
            and any(len(p) >= 4 and p.isalpha() for p in parts)):
        return False  # words joined: node-modules-linux-x64, release_2024_q3
    if re.fullmatch(r"[A-Za-z]+(?:[-_.][A-Za-z]+)*", v):
        return bool(re.fullmatch(r"[A-Z2-7]{16,}", v)) or (len(v) >= 24 and mixing(v) >= 0.4)
    upper, lower = any(c.isupper() for c in v), any(c.islower() for c in v)
    return (sum(c.isdigit() for c in v) >= 2 or bool(_HEXISH.match(v))
            or len(v) >= 20 and upper and lower and mixing(v) >= 0.35)


def prefixed(value: str) -> bool:
    """A provider token: its body varies (not ``ghp_xxxx...``) and is not a documented example."""
    v = clean(value)
    v = v.rstrip("/").rsplit("/", 1)[-1] if v.startswith("https://") else v  # a webhook URL: its last part
    return not_placeholder(v) and entropy(v) >= 2.5


_DIGEST_PREFIX = lazy(r"(?i)(?:sha(?:1|224|256|384|512)|md5|h1|blake2b?)[-:~]")
_CROCKFORD_ULID = lazy(r"\A[0-7][0-9A-HJKMNP-TV-Z]{25}\Z")
_BASE58_ADDRESS = lazy(r"\A[13mn2LMD][1-9A-HJ-NP-Za-km-z]{25,34}\Z")  # coin addresses, testnet too
_PUBLIC_BEFORE = lazy(
    r"(?i)(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-\w+|sk-ssh-\S+|base64,|sha(?:1|256|384|512)[-:~]|h1:|SHA256:|"
    r"publickey\s*=\s*|public key[:\s]+|fingerprint\s*|0x|age1|bc1|tb1)\s*\Z")


def _decodes_to_text(token: str) -> bool:
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= 8 and sum(32 <= b < 127 or b in (9, 10, 13) for b in raw) / len(raw) > 0.95


def _camel_words(part: str) -> float:
    """Share of capitals that start a lower-case word (about 1 in camelCase, about 0.2 in random text)."""
    capitals = [m.start() for m in re.finditer(r"[A-Z]", part)]
    return sum(bool(re.match(r"[A-Z][a-z]{2}", part[i:])) for i in capitals) / len(capitals) if capitals else 0.0


def random_token(token: str, before: str) -> bool:
    """A run of 20+ key characters that looks random: all three classes mixed, not a known public form."""
    core = token.strip("=-_.")
    if len(core) < 20 or core.isascii() and (core.lower() == core or core.upper() == core or core.isalpha()
                                             or not any(map(str.isdigit, core))):
        return False  # no part of it holds a capital, a small letter and a digit (the first test below)
    if _PUBLIC_BEFORE.search(before[-24:]) or _DIGEST_PREFIX.match(core):
        return False
    if _CROCKFORD_ULID.match(core) or _BASE58_ADDRESS.match(core) or _HEXISH.match(core) or "EXAMPLE" in core:
        return False
    if "/" in core and all(re.fullmatch(r"[A-Za-z]?[a-z0-9._\-]*", p) for p in core.split("/")):
        return False  # a path fragment such as src/api/v2/orders
    if _decodes_to_text(core) and len(core) % 4 == 0 or token.endswith("=") and _decodes_to_text(core):
        return False  # base64 of text, shown as an example
    parts = re.split(r"[-_.]", core)
    for part in parts if len(parts) > 1 else [core]:
        classes = {_class(c) for c in part}
        digits = sum(c.isdigit() for c in part)
        if _camel_words(part) >= 0.7:
            continue  # getUserById2AndCacheTheResult: capitals that start words
        if (len(part) >= 20 and {"u", "l", "d"} <= classes and entropy(part) >= 3.7 and mixing(part) >= 0.4
                and (digits >= 2 or len(part) >= 30 and mixing(part) >= 0.45)):
            return True
    return False


# Provider tokens by their own prefixes (gitleaks' and trufflehog's rules, widened to a family).
_PREFIXES = (
    r"sk-ant-(?:api|admin|sid)\d\d-[\w\-]{20,}", r"sk-(?:proj|svcacct|admin|or-v1|live|test)-[\w\-]{20,}",
    r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", r"sk-[A-Za-z0-9]{32,}", r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"github_pat_\w{40,}", r"gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|oas|agent)-[\w\-]{20,}", r"glsa_\w{30,}",
    r"glc_[\w\-=]{30,}", r"hf_[A-Za-z]{30,}", r"api_org_[A-Za-z]{30,}", r"NR(?:AK|II|JS|AA)-[\w\-]{19,}",
    r"[A-Fa-f0-9]{36}NRAL", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    r"xox[abposre]-[\w\-]{10,}", r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]+", r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{20,}",
    r"whsec_[A-Za-z0-9+/=]{24,}", r"AIza[\w\-]{35}", r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}",
    r"SG\.[\w\-]{20,}\.[\w\-]{20,}", r"npm_[A-Za-z0-9]{36}", r"pypi-AgEIcHlwaS5vcmc[\w\-]{50,}",
    r"rubygems_[a-f0-9]{48}", r"oy2[a-z0-9]{43}", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[\w\-]{30,}",
    r"hv[sbr]\.[\w\-]{20,}", r"[A-Za-z0-9]{14}\.atlasv1\.[\w\-=]{60,}", r"do[opr]_v1_[a-f0-9]{64}",
    r"dapi[a-f0-9]{32}(?:-\d)?", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}", r"EZ[AT]K[A-Za-z0-9]{54}",
    r"FLWSEC(?:K|K_TEST)-[a-h0-9]{32}-X", r"fio-u-[\w\-=]{64}", r"lin_api_[A-Za-z0-9]{40}",
    r"[ps]k\.eyJ[\w\-]{20,}\.[\w\-]{20,}", r"ntn_[A-Za-z0-9]{40,}", r"secret_[A-Za-z0-9]{43}",
    r"pscale_(?:tkn|pw|oauth)_[\w\-=.]{32,}", r"pnu_[A-Za-z0-9]{36}", r"pul-[a-f0-9]{40}", r"rdme_[a-z0-9]{70}",
    r"sntry[su]_[\w=]{40,}", r"shippo_(?:live|test)_[a-f0-9]{40}", r"sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}",
    r"EAAA[\w\-]{60}", r"sq0(?:atp|csp)-[\w\-]{22,}", r"SK[0-9a-f]{32}", r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
    r"ops_eyJ[A-Za-z0-9+/=]{100,}", r"AKCp[A-Za-z0-9]{69}", r"cmVmd[A-Za-z0-9]{59}", r"ATATT3[\w\-=]{150,}",
    r"CLOJARS_[a-z0-9]{60}", r"FlyV1 fm[12]_[\w\-=,+/]{40,}", r"fo1_[\w\-]{43}", r"fm[12][ar]?_[A-Za-z0-9+/]{100,}", r"ico-[A-Za-z0-9]{32}", r"API-[A-Z0-9]{26}",
    r"sha256~[\w\-]{43}", r"pplx-[A-Za-z0-9]{40,}", r"tk-us-[\w\-]{48}", r"sm_(?:pat|aat|sat)_[a-z0-9]{16}",
    r"gsk_[A-Za-z0-9]{40,}", r"xai-[A-Za-z0-9]{60,}", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", r"r8_[A-Za-z0-9]{37}",
    r"key-[a-f0-9]{32}", r"[a-f0-9]{32}-us\d{1,2}", r"[\w~.]{3}\dQ~[\w~.\-]{31,34}", r"p8e-[A-Za-z0-9]{32}", r"LTAI[A-Za-z0-9]{20}",
    r"4b1d[A-Za-z0-9]{38}", r"duffel_(?:test|live)_[\w\-=]{43}", r"tfp_[\w\-=.]{40,}", r"api-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}",
    r"HRKU-AA[\w\-]{50,}", r"\d{8,10}:AA[\w\-]{32,}", r"dckr_pat_[\w\-]{27}", r"bkua_[a-z0-9]{40}",
    r"figd_[\w\-]{40}", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", r"CFPAT-[\w\-]{43}", r"GOCSPX-[\w\-]{28}",
    r"ya29\.[\w\-]{30,}", r"1//0[\w\-]{40,}", r"sbp_[a-f0-9]{40}", r"pat-(?:na|eu)1-[a-f0-9\-]{36}", r"rnd_[A-Za-z0-9]{32}",
    r"nvapi-[\w\-]{60,}", r"tskey-(?:auth|api|client|webhook)-[\w\-]{20,}", r"nfp_[A-Za-z0-9]{36,}",
    r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24,}", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", r"pcsk_[\w]{40,}", r"sk_[a-f0-9]{48}",
    r"access_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32}", r"AAAA[\w\-]{7}:[\w\-]{100,}", r"nsec1[02-9ac-hj-np-z]{58}", r"[xt]prv[1-9A-HJ-NP-Za-km-z]{100,}", r"[A-Za-z0-9]{3,10}_(?:live|prod|secret|pat|tkn|token|apikey)_[A-Za-z0-9]{20,}",
    r"[MNO][A-Za-z\d_\-]{23,27}\.[\w\-]{6}\.[\w\-]{27,}", r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    r"https://discord(?:app)?\.com/api/webhooks/\d+/[\w\-]{10,}", r"https://hooks\.slack\.com/(?:services|workflows)/[\w/]{20,}",
    r"https://[\w\-]+\.webhook\.office\.com/\S{40,}", r"eyJ[\w\-]{8,}\.eyJ[\w\-]{8,}\.[\w\-]{8,}", r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{8,}",
)


def _at_least(pattern: str) -> str:
    """A fixed body length of 20+ read as "20 or more": a token cut short (a title, a topic) still leaks."""
    return re.sub(r"\{(\d{2,3})\}", lambda m: "{20,}" if int(m.group(1)) >= 20 else m.group(0), pattern)


PROVIDER_ALTERNATIVES = tuple(map(_at_least, _PREFIXES))
# A token whole: not inside a longer run of token characters, but it may be a path's segment ("/keys/AKIA…/").
_PROVIDER = Anchored(r"(?<![\w\-+.])(?P<value>", PROVIDER_ALTERNATIVES, r")(?![\w\-+])", secret_literals.LITERALS)

_PUTTY = Lazy(r"(?i)Private-Lines:[ \t]*\d+[ \t]*\r?\n(?P<value>(?:[A-Za-z0-9+/=]{16,}\r?\n?)+)")
_PEM = Lazy(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                  r"|[\s\S]{0,4000}?(?=\n\s*\n|\Z))", re.DOTALL)

# A name that says "credential" (in code, config, env files, headers), then ``=``, ``:`` or ``=>``.
_CRED_NAME = (r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_\-.]?key|apikey|access[_\-.]?key|private[_\-.]?key"
              r"|client[_\-.]?secret|auth(?:[_\-.]?(?:key|token))?|credentials?|signing[_\-.]?key|encryption[_\-.]?key"
              r"|master[_\-.]?key|account[_\-.]?key|license[_\-.]?key|session[_\-.]?key|secret[_\-.]?key|sas|pat"
              r"|requirepass|masterauth|storepass|keypass)")
# Every match of ``_ASSIGN`` holds a keyword of its rule, then only name characters up to its ``=`` or ``:``.
_ASSIGN_GATE = Gate(r"(?:pass|pwd|secret|token|key|auth|credential|sas|pat)[\w.\-]*[\"']?[ \t]*[=:]")
_ASSIGN = Lazy(
    rf"(?i)(?<![\w.])(?P<name>(?:[\w.\-$:]*?(?:[_\-.:$]|(?-i:(?<=[a-z])(?=[A-Z]))))?{_CRED_NAME}(?:(?:[_\-.]|(?-i:(?<=[a-z])(?=[A-Z])))[\w.\-]*)?)[\"']?[ \t]*(?:=|:|=>|:=)(?!=)[ \t]*(?:b|r|f)?[\"'`]?"
    rf"(?P<value>[^\s\"'`;,<]+(?:[^\S\n][^\s\"'`;,<]+)*?)(?=[\"'`;,<]|\s*$|\s+#|\s+//|\s)", re.MULTILINE)
# A credential name's own harmless endings: token_type, password_hash, SECRET_KEY_FILE, api_key_url.
_NOT_A_CREDENTIAL = lazy(
    r"(?i)[_\-.](?:type|url|uri|endpoint|name|length|len|size|id|file|path|count|expires?(?:_in|_at)?|ttl|header|field"
    r"|prefix|format|policy|hash|hashed|reset|min|max|limit|timeout|lifetime|algorithm|algo|env|var|label|hint|regex"
    r"|pattern|required|enabled|mode|version|scopes?|store|storage|manager|provider|method|strategy|rotation)$")
# ``SOME_KEY=value``: a key by its name alone, when the value is key-shaped (not a cache or sort key).
_KEY_ASSIGN = Lazy(
    r"(?i)(?<![\w.])(?P<name>[\w.\-]*key[\w\-]*)[\"']?[ \t]*(?:=|:|=>)(?!=)[ \t]*[\"'`]?(?P<value>[A-Za-z0-9+/][\w+/=.:~\-]{15,})")
_NOT_A_SECRET_KEY = lazy(r"(?i)public|publishable|_id\b|id$|name|file|path|cache|sort|primary|foreign|partition|idempoten"
                               r"|type|size|len|hash|digest|ref|map|field|column|index|prefix|pair|store|ring|board|word")


_XML = Lazy(rf"(?i)<(?P<name>[\w\-]*{_CRED_NAME}[\w\-]*)>(?P<value>[^<\s]{{4,}})</")
_SPACED = Lazy(r"(?i)(?<![\w.])(?:requirepass|masterauth)\s+[\"']?(?P<value>[^\s\"']{4,})")


# A credential word in prose or a header, then (within a few words) a key-shaped value.
_KEY_WORD = (r"(?:api[\s_\-]?(?:key|token|secret)|access[\s_\-]?(?:key|token)|auth(?:orization)?[\s_\-]?(?:token|key)"
             r"|app[\s_\-]?(?:key|secret)|admin[\s_\-]?key|secret(?:[\s_\-]?key)?|token|license[\s_\-]?key|client[\s_\-]?secret"
             r"|consumer[\s_\-]?secret|(?:service[\s_\-]?)?account[\s_\-]?key|signing[\s_\-]?secret|private[\s_\-]?key|encryption[\s_\-]?key|setup[\s_\-]?key"
             r"|seed|totp|2fa|mfa|otp|recovery[\s_\-]?key|master[\s_\-]?key|bearer|basic|x-api-key|private-token)")
_NEAR_KEY = Lazy(rf"(?i)(?<![\w\-])(?<!public\s){_KEY_WORD}s?\b[^\n\w]{{0,3}}(?:[^\n]{{0,36}}?[\s:=\"'(`])?"
                       r"(?P<value>[A-Za-z0-9+/][A-Za-z0-9+/=_.:~\-]{15,})")
# A service's name, then within 40 characters a key-shaped value (trufflehog's prefix-and-keyword
# detectors): "heroku: <uuid>", "GITHUB=<40 hex>", "kucoin secret 5f0c...". Not when an id word
# stands between them ("the heroku app id is <uuid>", "github commit <sha>").
PROVIDERS = (
    "adafruit", "adobe", "airtable", "algolia", "alibaba", "amplitude", "asana", "atlassian", "auth0", "bitbucket",
    "bittrex", "braintree", "circleci", "cloudflare", "codecov", "cohere", "coinbase", "confluence", "confluent",
    "contentful", "datadog", "discord", "dockerhub", "droneci", "dropbox", "etsy", "facebook", "fastly", "finicity",
    "finnhub", "firebase", "flickr", "freshbooks", "github", "gitlab", "gitter", "gocardless", "heroku", "hubspot",
    "intercom", "jfrog", "artifactory", "jira", "kraken", "kucoin", "launchdarkly", "linear", "linkedin", "mailchimp",
    "mailgun", "mandrill", "mapbox", "mattermost", "messagebird", "mixpanel", "netlify", "new relic", "newrelic",
    "nexmo", "okta", "pagerduty", "paypal", "pinecone", "plaid", "postmark", "pusher", "rapidapi", "segment",
    "sendbird", "sendgrid", "sendinblue", "sentry", "snyk", "sparkpost", "squarespace", "sumologic", "supabase",
    "telnyx", "railway", "resend", "netlify", "elevenlabs", "mistral", "deepgram", "travis", "trello", "twilio", "twitch", "twitter", "typeform", "vercel", "vonage", "yandex", "zendesk",
    "zoom")
_PROVIDER_NEAR = Lazy(
    r"(?i)\b(?:" + "|".join(p.replace(" ", r"[\s_\-]?") for p in PROVIDERS) + r")(?P<name>[^\n]{0,40}?)"
    r"(?<![\w+/.~\-])(?P<value>[A-Za-z0-9+][A-Za-z0-9+/=_~\-]{15,})(?![\w+/=.~\-])")
_ID_WORD = lazy(r"(?i)\b(?:ids?|uuid|identifier|app|account|org|organi[sz]ation|project|team|user(?:name)?|request|trace"
                      r"|commit|sha|hash|build|run|release|version|dyno|region|url|domain|host|channel|workspace|repo"
                      r"|issue|pr|ticket|job|pipeline|site|page|server|guild|webhook[s]? url|public)\b|https?:|/")
_SPACED_SEED = Lazy(r"(?i)(?:seed|secret|setup key|totp|2fa|mfa)[^\n]{1,24}?(?P<value>(?:[a-z2-7]{4}\s){3,}[a-z2-7]{4})\b")
_URL_PARAM = Lazy(r"(?i)[?&](?:secret|token|api_?key|access_token|password|passwd|sig|signature|client_secret)="
                        r"(?P<value>[^&\s\"'#]{8,})")
_URL_PASSWORD = Lazy(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://(?P<user>[^\s/:@'\"<>]*):(?P<value>[^\s/@'\"<>]+)@")
_CONN_PASSWORD = Lazy(r"(?i)(?:^|[;\s\"'])(?:password|pwd)\s*=\s*(?P<value>[^;\s\"']{4,});")


def _url_password(value: str) -> bool:
    return not_placeholder(value) and value.lower() not in ("password", "pass", "secret", "root", "guest", "postgres")


# Password flags of command lines: the value of -p, -a, -w, pass:... in the commands that take them.
# (keywords, the command and its flag): each runs only on a text that names its command.
_ARGS = r"[^\n|;]*?"
_CLI_FORMS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("sshpass",), rf"\bsshpass\b{_ARGS}[ \t]-p[ \t]*"),
    (("login",), rf"\b(?:docker|podman|buildah|nerdctl|helm|skopeo)\b{_ARGS}\blogin\b{_ARGS}[ \t]-p[ \t]+"),
    (("redis-cli",), rf"\bredis-cli\b{_ARGS}[ \t]-a[ \t]+"),
    (("ldap",), rf"\bldap\w*\b{_ARGS}[ \t]-w[ \t]+"),
    (("mysql",), rf"\bmysql\w*\b{_ARGS}[ \t]-p(?=\S)"),
    (("mongo", "rdesktop", "az ", "psexec"), rf"\b(?:mongo|mongosh|mongodump|mongorestore|rdesktop|az|psexec)\b{_ARGS}[ \t]-p[ \t]+"),
    (("openssl",), rf"\bopenssl\b{_ARGS}[ \t]-k[ \t]+"),
    (("sqlplus",), r"\bsqlplus[ \t]+[\w.\-]+/"),
    (("sqlcmd", "ipmitool", "zip"), rf"\b(?:sqlcmd|ipmitool|zip|unzip)\b{_ARGS}[ \t]-P[ \t]+"),
    (("7z",), rf"\b7za?\b{_ARGS}[ \t]-p(?=\S)"),
    (("plink", "pscp"), rf"\b(?:plink|pscp)\b{_ARGS}[ \t]-pw[ \t]+"),
    (("/p:",), r"[ \t/]/p:"),
    (("pass:",), r"-pass(?:in|out)?[ \t]+pass:"),
    (("storepass", "keypass"), r"-(?:storepass|keypass|srcstorepass|deststorepass)[ \t]+"),
    (("--pass", "--token", "--api", "--apikey", "--client-secret", "--secret", "--auth-token", "--access-token"),
     r"--(?:password|passwd|pass|passphrase|token|api-key|apikey|client-secret|secret|auth-token|access-token)(?:=|[ \t]+)"),
    (("curl", "wget", "http ", "https ", "xh "), rf"\b(?:curl|wget|http|https|xh)\b{_ARGS}[ \t](?:-u|--user|-a|--auth)[= \t]*[\"']?[^\s:\"'=]+:"),
    (("smbclient",), rf"\bsmbclient\b{_ARGS}[ \t]-U[ \t]*[\"']?[^\s%\"']+%"),
    (("htpasswd",), rf"\bhtpasswd\b{_ARGS}[ \t]-\w*b\w*[ \t]+(?:\S+[ \t]+)?\S+[ \t]+"),
    (("net use",), r"\bnet[ \t]+use[ \t]+\S+[ \t]+\S+[ \t]+"),
    (("nmcli",), rf"\bnmcli\b{_ARGS}\bpassword[ \t]+"),
    (("vault",), r"\bvault[ \t]+login[ \t]+(?!-)"),
    (("pgpassword", "mysql_pwd", "rediscli_auth", "rsync_password", "sshpass="),
     r"\b(?:PGPASSWORD|MYSQL_PWD|REDISCLI_AUTH|RSYNC_PASSWORD|SSHPASS)="),
)
_CLI_VALUE = r"[\"']?(?P<value>[^\s\"'|;]{4,})"


def _cli_value(value: str) -> bool:
    v = clean(value)
    return not_placeholder(v) and not v.startswith("-") and not re.fullmatch(r"env:\S*|file:\S*|stdin|fd:\d+", v)


# "-u root -p V", "-p V --user alice": a password flag beside a user flag, in any command. The value
# is read as a password stated in prose (``secret_prose.stated_secret``): not a port ("-p 8080:80"), a
# word or a path.
_USER_FLAG = r"(?:-u|-U|--user|--username)(?:[ \t]+|=)[\"']?[^\s\"'\-][^\s\"']*"
_FLAG_AFTER_USER = Lazy(rf"(?<![\w\-]){_USER_FLAG}{_ARGS}[ \t]-p[ \t]+{_CLI_VALUE}")
_FLAG_BEFORE_USER = Lazy(rf"[ \t]-p[ \t]+{_CLI_VALUE}(?={_ARGS}[ \t]{_USER_FLAG})")


def _flag_value(value: str) -> bool:
    from quipu.store.secret_prose import stated_secret  # it imports this module

    v = clean(value)
    return _cli_value(v) and not re.fullmatch(r"[\d.:\-]+(?:/(?:tcp|udp|sctp))?", v) and stated_secret(v, digits=False)


RULES: tuple[Rule, ...] = (
    Rule("private-key", ("-----begin",), _PEM),
    Rule("private-key", ("private-lines",), _PUTTY),
    Rule("provider-token", (), _PROVIDER, prefixed),
    Rule("assignment", ("pass", "pwd", "secret", "token", "key", "auth", "credential", "sas", "pat"), _ASSIGN, assigned,
         _NOT_A_CREDENTIAL, _ASSIGN_GATE),
    Rule("assignment", ("pass", "pwd", "secret", "token", "key", "auth", "credential"), _XML, assigned),
    Rule("assignment", ("requirepass", "masterauth"), _SPACED, not_placeholder),
    Rule("key-assignment", ("key",), _KEY_ASSIGN, key_like, _NOT_A_SECRET_KEY),
    Rule("credential-near-key", ("key", "token", "secret", "seed", "totp", "2fa", "mfa", "otp", "bearer", "basic"),
         _NEAR_KEY, key_like),
    Rule("provider-near-key", tuple(dict.fromkeys(map(keyword_of, PROVIDERS))), _PROVIDER_NEAR, key_like, _ID_WORD),
    Rule("totp-seed", ("seed", "secret", "setup key", "totp", "2fa", "mfa"), _SPACED_SEED),
    Rule("url-secret", ("secret=", "token=", "key=", "password=", "passwd=", "sig=", "signature=", "secret="), _URL_PARAM,
         not_placeholder),
    Rule("url-password", ("://",), _URL_PASSWORD, _url_password),
    Rule("connection-string", ("password", "pwd"), _CONN_PASSWORD, assigned),
*(Rule("cli-password", keywords, Lazy(form + _CLI_VALUE), _cli_value) for keywords, form in _CLI_FORMS),
    Rule("cli-password", (" -p ", " -p\t", "\t-p ", "\t-p\t"), _FLAG_AFTER_USER, _flag_value),
    Rule("cli-password", (" -p ", " -p\t", "\t-p ", "\t-p\t"), _FLAG_BEFORE_USER, _flag_value),
)
# The CLI rule's ``echo`` form only holds when the echoed text is piped to a password prompt.
_ECHO_PIPE = lazy(r"(?i)\becho\s+[\"']?(?P<value>[^\s\"'|;]{4,})[\"']?\s*\|\s*[^\n]*(?:--password-stdin|--stdin|\bsudo\s+-\w*S|\bchpasswd|\blogin\b)")
def echo_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start("value"), m.end("value")) for m in _ECHO_PIPE.finditer(text) if _cli_value(m.group("value"))]
