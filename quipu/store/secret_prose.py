"""Passwords in prose, account pairs and recovery codes: the secret scanner's rules that read words.

Contract:
- ``prose_spans(text)``: a password told in prose in 30+ languages ("the VPN password is
  blue-Falcon-93", "パスワードはXです", "heslo je X", inflections such as "salasanan", "паролем"),
  pass phrases ("correct-horse-battery-staple-orbit", or spaced after "passphrase is"), seed and
  recovery phrases; the value must read like a password (``secret_rules.secretish``), not a word,
  a number, a host name or an algorithm ("hashed with argon2id").
- The value a sentence states for a password word (``stated_value``: "the wifi password is V",
  "password: V", "password = V", "pw V", "password now V", "the password for staging is V",
  "Passwort: V", "login admin / V", "the password's V", "the password was / has been / got changed
  (set, reset, updated, rotated) to V", "password changed to V", "the new password will be V", "set
  (change, reset) alice's password (for X) to V"; before the word: "use / try V as the password", "V
  is the password"), the word also spelled to pass a filter ("p@ssword", "passw0rd", "pa$$word",
  "pswd"), is a secret when it reads like a credential rather than a description
  (``stated_secret``), with or without a digit: letters that are neither words of the package's
  English lexicon (``quipu/data/lexicon.txt``, the index's, looked up by their Porter stems, a
  prefix or suffix aside, one or two joined: "gitignored", "keycloak") nor read like a word of
  any language (letters in random case, or pairs of letters rare in English words: "vKqPzRwT",
  not "Kubernetes" or "obligatoire"); three or more lexicon words joined
  ("CorrectHorseBatteryStaple", "correct-horse-battery-staple"; not after a bare "pass", nor
  joined by "_" or ".", as names in code are); a word with symbols inside ("kqp!zrwt"); digits
  alone after a password, passcode or PIN word. A placeholder or a reference (``$DB_PASSWORD``,
  ``${{ secrets.X }}``, ``<your-password>``, ``****``, ``changeme``, a password manager's name,
  letters that name a credential: "PGPASSWORD", "xkcdpass"), a call and an algorithm's name ("Argon2id-hashed") are not, and a stated value that is none is
  not read again as a password further on; a weak password such as ``password123`` is one.
- ``stated_spans(text)``: the same for a secret, a token, an API key or a PIN ("the token is V",
  "the token was rotated to V", "use V as the token", "PIN: 482913"): only the stated value, only
  when it reads like no word, never a phrase.
- ``pair_spans(text)``: an account and its password side by side ("admin / Gr4fana!2024"; with
  no digit, as ``stated_secret`` reads it: "admin / TpqzRwkmX").
- ``code_spans(text)``: recovery and backup codes after the words that announce them.
- ``KEYWORDS``: the lower-case words one of which a text must hold for these to find anything.
"""
from __future__ import annotations

import collections
import functools
import itertools
import math
import os
import re

from quipu.store.secret_patterns import lazy
from quipu.store.secret_rules import keyword_of, not_placeholder, secretish

# A password in prose: the word for it in many languages, a few joining words, then the value.
PASSWORD_WORDS = (
    "password", "passwords", "passwd", "passphrase", "pass phrase", "passcode", "pwd", "pw", "pass", "passwort", "kennwort",
    "mot de passe", "contraseña", "contrasena", "contrasenya", "clave", "senha", "wachtwoord", "пароль", "паролата",
    "парола", "şifre", "şifresi", "sifre", "parola", "parolă", "hasło", "haslo", "lösenord", "lösenordet", "passord",
    "passordet", "adgangskode", "adgangskoden", "kodeord", "salasana", "heslo", "hesla", "geslo", "lozinka", "jelszó",
    "jelszava", "κωδικός", "συνθηματικό", "parool", "parole", "slaptažodis", "lykilorð", "pasahitza", "mật khẩu",
    "kata sandi", "kata laluan", "sandi", "パスワード", "パスフレーズ", "暗証番号", "合言葉", "密码", "密碼", "口令",
    "비밀번호", "비번", "암호", "패스워드", "unlock phrase", "unlock code", "vault key", "كلمة المرور", "كلمة السر", "סיסמה", "סיסמא", "पासवर्ड", "रहस्य शब्द", "รหัสผ่าน",
    "hesl", "парол", "hasł", "hasl", "jelsz", "lozink", "gesl", "salasan", "lösenord", "passord", "adgangskod",
    "wachtwoord", "kennw", "passw", "contrase", "mật khẩu",
    "login", "credentials", "creds", "wifi key", "wlan key", "wpa key", "network key", "master password", "seed phrase", "recovery phrase", "mnemonic",
)
# Spelled to pass a filter, or short: "p@ssword", "passw0rd", "pa$$word", "pa55wd", "pswd", "passwrd".
_OBFUSCATED = r"p(?:[a@4][s$5]{1,2}|[s$5])w(?:[o0]?r)?d(?![\w$@])"
_HEADS = [*("".join(c) for n in (1, 2) for c in itertools.product("a@4", *["s$5"] * n)), "s", "$", "5"]
SPELLINGS = tuple(f"p{head}w{mid}d" for head in _HEADS for mid in ("", "r", "or", "0r"))  # the keywords of its matches
_WEAK = {"pass", "pw", "pwd", "clave", "sandi", "login", "credentials", "creds", "parole"}
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xAC00, 0xD7AF), (0xFF00, 0xFFEF), (0x0E00, 0x0E7F))
_CJK_CLASS = "[" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in _CJK_RANGES) + "]"
_CJK = lazy(_CJK_CLASS)
_ENGLISH = {"password", "passwords", "passwd", "passphrase", "pass phrase", "passcode", "login", "credentials", "creds",
            "master password", "seed phrase", "recovery phrase", "mnemonic", "wifi key", "wlan key", "wpa key", "network key"}
# Words after which only the stated value counts (``stated_spans``), not any password-like word nearby.
STATED_WORDS = ("secret", "token", "api key", "api token", "access token", "auth token", "secret key", "client secret",
                "pin code", "pin number")
_STATED_ONLY = {*STATED_WORDS, "pin"}


def _word(w: str) -> str:
    """A password word; in other languages with its inflections ("hesla", "salasanan", "паролем")."""
    plain = w in _ENGLISH or w in _WEAK or any(a <= ord(c) <= b for c in w for a, b in _CJK_RANGES)
    return re.escape(w) + ("" if plain else r"[^\W\d_]{0,4}")


_PROSE_WORD = lazy(
    r"(?i)(?<![A-Za-z0-9_$./:@])(?:" + _OBFUSCATED + "|"
    + "|".join(_word(w) for w in sorted(PASSWORD_WORDS, key=len, reverse=True)) + r")(?![A-Za-z0-9_\-/@])")
_SPELLED = lazy(r"(?i)" + _OBFUSCATED + r"\Z")
_STATED_WORD = lazy(  # "PIN" in capitals: "pin" is a verb of package versions
    r"(?i)(?<![A-Za-z0-9_$./:@])(?:" + "|".join(map(re.escape, sorted(STATED_WORDS, key=len, reverse=True)))
    + r"|(?-i:PIN)(?=[ :=]))(?![A-Za-z0-9_\-/@])")
_VALUE = lazy(r"[^\s\"'`«»“”„「」『』（）()\[\],;，。、：:]+")
_PHRASE = lazy(r"\A[a-z]{3,12}(?:([-_.])[a-z]{3,12})(?:\1[a-z]{3,12}){2,}\Z")
# Names of algorithms and formats that follow "passwords are hashed with ..." and look like passwords.
_TECH_TERM = lazy(r"(?i)^(?:argon2(?:id|i|d)?|sha-?\d+|md5|bcrypt|scrypt|pbkdf2\S*|aes-?\d+\S*|base(?:32|64)|utf-?8"
                        r"|http/?[23]|oauth2?|ipv[46]|x509|ed25519|rsa-?\d+|tls-?1\.?\d|v\d+(?:\.\d+)*|[a-z]+\d{2,4})$")
# The names of algorithms and formats alone (not "hunter42"): a value stated as one is no password.
_ALGORITHM = lazy(r"(?i)^(?:argon2(?:id|i|d)?|(?:sha-?\d+|md5)(?:crypt|sum)?|[by]crypt|scrypt|pbkdf2\S*|aes-?\d+\S*"
                  r"|base(?:32|64)\w*|utf-?8|http/?[23]|oauth2?|ipv[46]|x509|[ex]d?25519|x448|rsa-?\d+|tls-?1\.?\d|v\d+(?:\.\d+)*|[hrep]s\d{3})$")
_ENV_NAME = lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\Z")  # the variable a value is read from: QUIPU_DB_PASSWORD
_STOPWORDS = frozenset("the a an is in on at of to for and or be are was by with from as it this that not your our must should "
                       "have has can will need needs use uses used contain contains require requires into only never always "
                       "stored kept saved shared sent set changed reset rotated managed generated".split())


# The value a sentence states for a password word: after "is" (in the languages of the words),
# ":", "=" or a dash, after "for staging" and the like, or right after an English password word.
_CONNECTORS = frozenset("is was are were becomes remains ist lautet war est était es era é è är var er on oli jest je "
                        "este adalah ialah là είναι это - – — -> →".split())
# "the password has been changed to V", "was reset to V", "got rotated to V", "is now V", "will be V".
_AUX = frozenset("has have had been be being got gets get will would shall should must can could may might just now "
                 "currently still also since temporarily already recently finally again then".split())
_CHANGED = frozenset("change changed changes set sets reset resets update updated updates rotate rotated rotates switch "
                     "switched modify modified".split())
# "set / change / reset (alice's) password (for X) to V": a verb of setting in the words before the password word.
_SET_BEFORE = lazy(r"(?i)\b(?:set|setting|chang(?:e|ed|ing)|reset(?:ting)?|updat(?:e|ed|ing)|rotat(?:e|ed|ing)"
                   r"|switch(?:ed|ing)?|modif(?:y|ied|ying))\W+(?:[\w'’\-]+\W+){0,3}\Z")
_QUALIFIERS = frozenset("for of on at to in from with für von pour de du des del para da do dla na voor van för til".split())
_EMPHASIS = lazy(r"[*_~]+\Z")  # "**password**: V": marks of emphasis, not a value
_TOKEN = lazy(r"[^\s\"'`«»“”„「」『』（）()\[\],;，。、：:=][^\s\"'`«»“”„「」『』（）()\[\],;，。、：:]*")
_STRONG_EN = frozenset({"password", "passwords", "passwd", "passphrase", "pass phrase", "passcode", "master password",
                        "wifi key", "wlan key", "wpa key", "network key", "unlock phrase", "unlock code", "vault key"})
_BARE = _STRONG_EN | {"pw", "pwd"}  # "pw V": no joining word
_DIGITS_OK = _STRONG_EN | {"pw", "pwd", "pin", "pin code", "pin number"}
# "the db pass is V": "pass" states a password only after a word like these (not "the second pass").
_OWNER = lazy(r"(?i)\b(?:db|database|root|admin|wifi|wi-fi|my|your|user|account|vpn|ssh|sudo|server|login|sql|mysql"
              r"|postgres|redis|ftp|smtp|mail|email|router|portal)\W{0,2}\Z")
# Where a password is kept, not what it is: "password: Doppler", "the password is keycloak-issued".
_KEPT_IN = lazy(r"(?i)^(?:doppler|infisical|keeper|dashlane|passbolt|enpass|sops|ssm|keyvault|secretsmanager|akeyless"
                r"|conjur|onepassword|vaultwarden|bitwarden|lastpass|keepass\w*|keychain|vault)")
_FUNCTION_WORDS = frozenset("the and for not see same per via from with into onto its this that our your their any all each "
                            "every only default set yet".split())
_PREFIXES = ("un", "re", "de", "dis", "mis", "pre", "non", "auto", "over", "under", "sub", "super", "multi", "inter", "co",
             "self")
_SUFFIXES = ("s", "es", "ed", "d", "ing", "er", "ers", "ly", "able", "ible", "less", "ness", "ment", "ize", "ized", "ise",
             "ised", "ation", "ful", "ity")
_WORDLIKE = -3.3  # mean log-probability of a word's letter pairs; random letters score about -5, words -2.5


def stated_value(window: str, word: str, before: str = "") -> tuple[int, int, bool] | None:
    """The span in ``window`` (the rest of the line after the password word ``word``; ``before``,
    the text before the word) of the value the sentence states for it, and whether that value
    reads like a credential (``stated_secret``); None when the sentence states none."""
    toks = [t for t in _TOKEN.finditer(window) if not _EMPHASIS.match(t.group())][:12]
    if not toks:
        return None
    words = [t.group().lower() for t in toks]
    set_before = bool(_SET_BEFORE.search(before))

    def onto(k: int, sure: bool) -> int | None:  # from k, over "has been", "now": "changed to V", "will be V"
        j = next((i for i in range(k, len(toks)) if words[i] not in _AUX), len(toks))
        if j + 2 < len(toks) and words[j] in _CHANGED and words[j + 1] == "to":
            return j + 2
        return j if j < len(toks) and (sure or k < j and words[j - 1] in ("be", "been")) else k if sure else None

    def value_at(k: int) -> int | None:  # the value's index when a joining word or sign is at k
        gap = window[toks[k - 1].end() if k else 0:toks[k].start()]
        if ":" in gap or "=" in gap:
            return k
        if k == 0 and gap + words[0] in ("'s", "’s") and len(toks) > 1:  # "the password's V"
            return onto(1, True)
        if words[k] in _CONNECTORS and k + 1 < len(toks):
            return onto(k + 1, True)
        return k + 1 if words[k] == "to" and set_before and k + 1 < len(toks) else onto(k, False)

    at = value_at(0)
    if at is None and toks[0].group().lower() in _QUALIFIERS:  # "the password for the staging db is V"
        at = next((v for k in range(1, min(len(toks), 8)) if (words[k] not in _QUALIFIERS or words[k] == "to")
                   and (v := value_at(k)) is not None), None)  # "on" of "for X on staging" joins no value
    if at is None and word in _BARE and not window[:toks[0].start()].strip():
        at = onto(0, True)
    if at is None and len(toks) > 2 and toks[1].group() == "/":  # "login alice / V"
        at = 0
    if at is None:
        return None
    if at + 2 < len(toks) and toks[at + 1].group() == "/":  # "credentials: admin / V": the account, then V
        at += 2
    token = toks[at]
    if window[token.end():token.end() + 1] == "(":
        return token.start(), token.end(), False  # a call: getpass.getpass()
    phrase = word not in _STATED_ONLY and (word not in _WEAK or word in ("pw", "pwd")
                                           or word == "pass" and bool(_OWNER.search(before)))
    english = word in _ENGLISH or word in _WEAK or word in _STATED_ONLY
    value = token.group().rstrip(".,!?")
    weak = word in _WEAK or word in _STATED_ONLY and word not in _DIGITS_OK
    secret = stated_secret(value, phrase=phrase, digits=word in _DIGITS_OK or not english, weak=weak)
    if not secret and weak and any(c.isdigit() for c in value) and not _described(value):
        return None  # "pw is hunter22": the words of prose below read it
    return token.start(), token.start() + len(token.group().rstrip(".,?")), secret


def stated_secret(value: str, *, phrase: bool = True, digits: bool = True, weak: bool = False) -> bool:
    """Whether ``value``, stated as a password, is one: not a word, a phrase of words, a
    placeholder or a reference. ``phrase``: three or more lexicon words joined count; ``digits``:
    digits alone count; ``weak``: after a weak word ("pass", "token"), six digits at least, and
    with a digit, letters that read like no word as well."""
    if len(value) < 4 or not not_placeholder(value) or _KEPT_IN.match(value):
        return False
    if any(c.isalpha() and not c.isascii() for c in value):
        return False  # a word of another language ("verschlüsselt"); a password seldom has one
    letters = re.sub(r"[^A-Za-z]", "", value)
    if value.isdigit():
        return digits and len(value) >= (6 if weak else 4)
    if _ALGORITHM.match(value) or _described(value):
        return False  # an algorithm or a format: argon2id, sha256, RS256, Argon2id-hashed
    if any(c.isdigit() for c in value):  # after "token" or "pass", letters that read like no word too ("S3-compatible")
        return secretish(value) and (not weak or len(letters) < 4 or _random([letters]))
    core = value.strip("-_.")
    if re.search(r"[^A-Za-z\-_.]", core):  # symbols inside the letters: "kqp!zrwt", not an address, a tag or a path
        return len(core) >= 6 and len(letters) >= 2 and not _NOT_A_VALUE.match(core)
    parts = [p for p in re.split(r"[-_.]+", core) if p]
    if len(letters) < 8:
        return False
    pieces = [_segment(p.lower()) for p in parts]
    if all(p is not None for p in pieces):
        words = [w for p in pieces if p is not None for w in p]
        # Joined by "_" or ".", words are a name in code (settings.admin_password), not a phrase.
        return phrase and len(words) >= 3 and not _FUNCTION_WORDS.intersection(words) and not re.search(r"[_.]", core)
    return not re.search(r"(?i)pass|pwd|secret|token", core) and _random(parts)  # a name: PGPASSWORD, xkcdpass


def _described(value: str) -> bool:
    """Words joined to an algorithm's or a format's name: "Argon2id-hashed", "caching_sha2_password"."""
    parts = re.split(r"[-_]", value)
    return len(parts) > 1 and any(_ALGORITHM.match(p) for p in parts) and all(
        _ALGORITHM.match(p) or p.isalpha() and (p.isupper() and len(p) <= 5 or _segment(p.lower()) is not None)
        for p in parts)


# Words with signs in them that are not passwords: an address, a mention or tag, a path, a call.
_NOT_A_VALUE = lazy(r"[\w.+\-]+@[\w\-.]+\Z|[@#][\w\-.]+\Z|[\w.\-~]*(?:[/\\][\w.\-]*)+\Z|[\w.]+\(.*")


def _random(parts: list[str]) -> bool:
    """Letters that read like no word: random case ("vKqPzRwT"), or runs of letters (of one case,
    or a capital and small letters) that are no word of the lexicon nor an acronym, half the
    letters at least, whose pairs of letters are rare in words ("kqpzrwtb", "BknNptLct"; not
    "Kubernetes", "JsxIdentifier", "JWT-encoded")."""
    runs = [r for part in parts for r in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", part)]
    if len(runs) >= 3 and sum(len(r) <= 2 for r in runs) * 2 >= len(runs):
        return True
    acronyms = {p for p in parts if p.isupper() and len(p) <= 5}  # "JWT-encoded", "SSO-only"
    unknown = [r.lower() for r in runs if len(r) >= 2 and r not in acronyms and _segment(r.lower()) is None]
    size = sum(len(r) for r in unknown)
    if not unknown or size * 2 < sum(map(len, runs)):
        return False
    return sum(_letter_pairs(r) * (len(r) + 1) for r in unknown) / (size + len(unknown)) < _WORDLIKE


@functools.cache
def _lexicon() -> frozenset[str]:
    """The index's lexicon of ordinary English: Porter stems. It is a file of the package, next to
    this folder in a checkout and a wheel alike (read without ``importlib.resources``, which costs
    a short command more to import than the file to read)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "lexicon.txt")
    with open(path, encoding="utf-8") as f:
        return frozenset(line for line in f.read().splitlines() if line and not line.startswith("#"))


@functools.cache
def _pairs() -> dict[str, float]:
    """The log-probability of each letter pair of the lexicon's stems (``^`` and ``$`` are a
    word's ends), given its first letter."""
    marked = "^" + "$\n^".join(_lexicon()) + "$"
    pairs = collections.Counter(zip(marked, marked[1:], strict=False))
    firsts = collections.Counter(marked)
    letters = "^abcdefghijklmnopqrstuvwxyz"
    return {a + b: math.log((pairs[a, b] + 0.1) / (firsts[a] + 2.8)) for a in letters for b in letters[1:] + "$"}


def _letter_pairs(word: str) -> float:
    """The mean log-probability of the letter pairs of ``word`` (its ends included)."""
    marked = f"^{word}$"
    table = _pairs()
    return sum(table.get(marked[i:i + 2], -9.0) for i in range(len(marked) - 1)) / (len(marked) - 1)


@functools.lru_cache(maxsize=4096)
def _is_word(piece: str) -> bool:
    from quipu.prompt.stem import porter_stem

    stems = _lexicon()
    return len(piece) >= 3 and (piece in stems or porter_stem(piece) in stems)


def _words(s: str) -> list[str] | None:
    """``s`` as the fewest lexicon words of 3+ letters, or None."""
    best: list[list[str] | None] = [[]] + [None] * len(s)
    for end in range(3, len(s) + 1):
        for start in range(max(0, end - 20), end - 2):
            head = best[start]
            if head is not None and _is_word(s[start:end]) and (best[end] is None or len(head) + 1 < len(best[end] or ())):
                best[end] = [*head, s[start:end]]
    return best[len(s)]


@functools.lru_cache(maxsize=1024)
def _segment(s: str) -> tuple[str, ...] | None:
    """``s`` (lower-case letters) as words of the lexicon, a prefix or a suffix aside ("un" +
    "encrypted", "memo" + "ized"): the fewest words, or None when it is none."""
    if len(s) > 48 or not s.isascii():
        return None
    found = [_words(s), *(_words(s[len(p):]) for p in _PREFIXES if s.startswith(p) and len(s) - len(p) >= 3),
             *(_words(s[:-len(x)]) for x in _SUFFIXES if s.endswith(x) and len(s) - len(x) >= 3)]
    fewest = min((f for f in found if f), key=len, default=None)
    return tuple(fewest) if fewest else None


# The value before the password word: "use V as the password", "try V for the password", "V is the new password";
# then the password word ends the clause (not "use Kubernetes as the password store").
_USED_AS = lazy(r"(?i)(?:\b(?:use[sd]?|using|try|tried|trying|enter(?:ed)?|typ(?:e|ed|ing)|cho(?:se|ose)|pick(?:ed)?)\s+"
                r"|(?:^|(?<=[\s(]))(?=\S+\s+(?:is|was)\s))[\"'`]?(?P<value>[^\s\"'`]{4,}?)[\"'`]?"
                r"\s+(?:as|for|is|was)\s+(?:[\w'’\-]+\s+){0,3}\Z")
_CLAUSE_END = lazy(r"(?i)\s*(?:[.,;:!?)\-—–]|\Z|(?:for|of|on|at|in|to|now|here|today|yesterday|until|and|but|so|we|you"
                   r"|i|then|again)\b)")


def _line_before(text: str, at: int) -> str:
    return text[max(text.rfind("\n", 0, at) + 1, at - 48):at]


def _value_before(text: str, at: int, rest: str, word: str) -> tuple[int, int] | None:
    """The span of V in "use V as the password", "V is the token" (the credential word at ``at``,
    ``rest`` the line after it), when V reads like a credential as ``stated_value`` judges it."""
    before = _line_before(text, at)
    used = _USED_AS.search(before) if _CLAUSE_END.match(rest) else None
    if used is None:
        return None
    value, only = used.group("value").rstrip(".,!?:"), word in _STATED_ONLY
    if not stated_secret(value, phrase=not only, digits=word in _DIGITS_OK or not only,
                         weak=only and word not in _DIGITS_OK):
        return None
    start = at - len(before) + used.start("value")
    return start, start + len(value)


def prose_spans(text: str) -> list[tuple[int, int]]:
    """Spans of passwords told in prose ("the VPN password is blue-Falcon-93", "パスワードはXです")."""
    out: list[tuple[int, int]] = []
    for m in _PROSE_WORD.finditer(text):
        word = "password" if _SPELLED.match(m.group()) else m.group().lower()  # "p@ssword", "passwd", "pswd"
        line_end = text.find("\n", m.end())
        rest = text[m.end():(len(text) if line_end < 0 else line_end)][:160]
        before = _line_before(text, m.start())
        used = _value_before(text, m.start(), rest, word) if word in _BARE else None
        if used is not None:
            out.append(used)
            continue
        window = rest[:64]
        if word in ("seed phrase", "recovery phrase", "mnemonic"):
            words = re.match(r"\W{0,4}(?:is\s+|:\s*)?[\"'“]?((?:[a-z]{3,8}\s+){5,23}[a-z]{3,8})\b", text[m.end():])
            if words and not set(words.group(1).split()) & _STOPWORDS:
                out.append((m.end() + words.start(1), m.end() + words.end(1)))
            continue
        if "phrase" in word or word.startswith("pass"):  # a diceware phrase with spaces: "is correct horse battery staple"
            words = re.match(r"\s*(?:is|was|:|=)\s*[\"'“`]?((?:[a-z]{3,10}\s){3,9}[a-z]{3,10})\b(?!\s+[a-z])", text[m.end():])
            if words and not set(words.group(1).split()) & _STOPWORDS:
                out.append((m.end() + words.start(1), m.end() + words.end(1)))
                continue
        stated = stated_value(rest, word, before)
        if stated is not None and stated[2]:
            out.append((m.end() + stated[0], m.end() + stated[1]))
            continue
        judged = -1 if stated is None else stated[0]  # a stated value that is no secret ("SSO-only") is none below either
        seen = 0
        for v in _VALUE.finditer(window):
            value = v.group()
            cut = _CJK.search(value)
            start = v.start()
            if cut:  # "Xです", "는X": the value is the run of other characters
                pieces = [p for p in re.split(_CJK_CLASS + "+", value) if p]
                if not pieces:
                    continue
                start += value.find(pieces[0])
                value = pieces[0]
            value = value.rstrip(".!?,") if not value.endswith("!") or len(value) < 6 else value.rstrip(".,?")
            weak_value = not re.search(r"[^a-z0-9]", value) or _TECH_TERM.match(value)
            strong = (secretish(value) and (word not in _WEAK or len(value) >= 8) and not (weak_value and seen > 2)
                      and not _ENV_NAME.match(value) and v.start() != judged)
            phrase = bool(_PHRASE.match(value)) and ("phrase" in word or "pass" in word or "パス" in word)
            if strong or phrase:
                out.append((m.end() + start, m.end() + start + len(value)))
                break
            seen += 1
            if seen >= (4 if word in _WEAK else 6):
                break
    return out


def stated_spans(text: str) -> list[tuple[int, int]]:
    """Spans of values stated for a secret, a token, an API key or a PIN ("the token is V",
    "PIN: 482913") that read like credentials (``stated_value``)."""
    out: list[tuple[int, int]] = []
    for m in _STATED_WORD.finditer(text):
        line_end = text.find("\n", m.end())
        rest = text[m.end():(len(text) if line_end < 0 else line_end)][:160]
        stated = stated_value(rest, m.group().lower(), _line_before(text, m.start()))
        if stated is not None and stated[2]:
            out.append((m.end() + stated[0], m.end() + stated[1]))
        elif (used := _value_before(text, m.start(), rest, m.group().lower())) is not None:
            out.append(used)
    return out


# An account and its password side by side: "admin / Gr4fana!2024", "root:Sup3rR00t!".
_ACCOUNT_PAIR = lazy(r"(?i)(?<![\w.@\-/])(?P<account>admin|administrator|root|sa|postgres|ubuntu|pi|user|guest|sysadmin"
                           r"|superuser|operator|deploy|service|svc|ci)(?:[ \t]?/[ \t]*|:)(?P<value>[^\s\"'`,;]{6,})")


_PLAIN_ACCOUNT = frozenset("admin administrator root sa postgres ubuntu pi guest sysadmin superuser".split())


def pair_spans(text: str) -> list[tuple[int, int]]:
    """Passwords beside an account: with a digit, ``secretish``; without, what ``stated_secret``
    takes (a passphrase only beside an account that is nothing else: "admin", not "service")."""
    out: list[tuple[int, int]] = []
    for m in _ACCOUNT_PAIR.finditer(text):
        value = m.group("value")
        core = value.rstrip(".,!?")
        if any(c.isdigit() for c in value) or ":" in core:
            if secretish(value):
                out.append((m.start("value"), m.end("value")))
        elif stated_secret(core, phrase=m.group("account").lower() in _PLAIN_ACCOUNT, digits=False):
            out.append((m.start("value"), m.start("value") + len(value.rstrip(".,?"))))
    return out


# Recovery and backup codes: the words, then code-shaped tokens in the lines that follow.
_CODES_HEAD = lazy(r"(?i)\b(?:recovery|backup|2fa|mfa|one[\s\-]time|emergency|scratch)\s+codes?\b")
_CODE = lazy(r"(?i)(?<![\w\-])(?:[a-z0-9]{4,6}(?:-[a-z0-9]{4,6}){1,3}|\d{4}\s\d{4}|\d{6,10}|[a-f0-9]{8,12})(?![\w\-])")


def code_spans(text: str) -> list[tuple[int, int]]:
    """Codes after "recovery codes": those with a digit, and their siblings of the same shape."""
    out: list[tuple[int, int]] = []
    for m in _CODES_HEAD.finditer(text):
        found = list(_CODE.finditer(text, m.end(), m.end() + 400))
        shapes = {re.sub(r"\w", "x", c.group()) for c in found if any(ch.isdigit() for ch in c.group())}
        out += [(c.start(), c.end()) for c in found if re.sub(r"\w", "x", c.group()) in shapes]
    return out


PROSE_KEYWORDS = tuple(dict.fromkeys([*map(keyword_of, PASSWORD_WORDS), *SPELLINGS]))
# Every match of a word that states only a value holds one: "api key" (not "key" alone), "PIN" and its sign.
STATED_KEYWORDS = ("secret", "token", "api key", "pin ", "pin:", "pin=")
_ACCOUNTS = ("admin", "administrator", "root", "sa", "postgres", "ubuntu", "pi", "user", "guest", "sysadmin", "superuser",
             "operator", "deploy", "service", "svc", "ci")
PAIR_KEYWORDS = tuple(f"{name}{sep}" for name in _ACCOUNTS for sep in (":", "/", " /"))
CODE_KEYWORDS = ("recovery", "backup", "2fa", "mfa", "one time", "one-time", "emergency", "scratch")
KEYWORDS = (*PROSE_KEYWORDS, *STATED_KEYWORDS, *PAIR_KEYWORDS, *CODE_KEYWORDS)
