"""Passwords in prose, account pairs and recovery codes: the secret scanner's rules that read words.

Contract:
- ``prose_spans(text)``: a password told in prose in 30+ languages ("the VPN password is
  blue-Falcon-93", "パスワードはXです", "heslo je X", inflections such as "salasanan", "паролем"),
  pass phrases ("correct-horse-battery-staple-orbit", or spaced after "passphrase is"), seed and
  recovery phrases; the value must read like a password (``secret_rules.secretish``), not a word,
  a number, a host name or an algorithm ("hashed with argon2id").
- ``pair_spans(text)``: an account and its password side by side ("admin / Gr4fana!2024").
- ``code_spans(text)``: recovery and backup codes after the words that announce them.
- ``KEYWORDS``: the lower-case words one of which a text must hold for these to find anything.
"""
from __future__ import annotations

import re

from quipu.store.secret_patterns import lazy
from quipu.store.secret_rules import keyword_of, secretish

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
_WEAK = {"pass", "pw", "pwd", "clave", "sandi", "login", "credentials", "creds", "parole"}
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xAC00, 0xD7AF), (0xFF00, 0xFFEF), (0x0E00, 0x0E7F))
_CJK_CLASS = "[" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in _CJK_RANGES) + "]"
_CJK = lazy(_CJK_CLASS)
_ENGLISH = {"password", "passwords", "passwd", "passphrase", "pass phrase", "passcode", "login", "credentials", "creds",
            "master password", "seed phrase", "recovery phrase", "mnemonic", "wifi key", "wlan key", "wpa key", "network key"}


def _word(w: str) -> str:
    """A password word; in other languages with its inflections ("hesla", "salasanan", "паролем")."""
    plain = w in _ENGLISH or w in _WEAK or any(a <= ord(c) <= b for c in w for a, b in _CJK_RANGES)
    return re.escape(w) + ("" if plain else r"[^\W\d_]{0,4}")


_PROSE_WORD = lazy(
    r"(?i)(?<![A-Za-z0-9_$./:@])(?:" + "|".join(_word(w) for w in sorted(PASSWORD_WORDS, key=len, reverse=True))
    + r")(?![A-Za-z0-9_\-/@])")
_VALUE = lazy(r"[^\s\"'`«»“”„「」『』（）()\[\],;，。、：:]+")
_PHRASE = lazy(r"\A[a-z]{3,12}(?:([-_.])[a-z]{3,12})(?:\1[a-z]{3,12}){2,}\Z")
# Names of algorithms and formats that follow "passwords are hashed with ..." and look like passwords.
_TECH_TERM = lazy(r"(?i)^(?:argon2(?:id|i|d)?|sha-?\d+|md5|bcrypt|scrypt|pbkdf2\S*|aes-?\d+\S*|base(?:32|64)|utf-?8"
                        r"|http/?[23]|oauth2?|ipv[46]|x509|ed25519|rsa-?\d+|tls-?1\.?\d|v\d+(?:\.\d+)*|[a-z]+\d{2,4})$")
_STOPWORDS = frozenset("the a an is in on at of to for and or be are was by with from as it this that not your our must should "
                       "have has can will need needs use uses used contain contains require requires into only never always "
                       "stored kept saved shared sent set changed reset rotated managed generated".split())


def prose_spans(text: str) -> list[tuple[int, int]]:
    """Spans of passwords told in prose ("the VPN password is blue-Falcon-93", "パスワードはXです")."""
    out: list[tuple[int, int]] = []
    for m in _PROSE_WORD.finditer(text):
        word = m.group().lower()
        line_end = text.find("\n", m.end())
        window = text[m.end():(len(text) if line_end < 0 else line_end)][:64]
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
            strong = secretish(value) and (word not in _WEAK or len(value) >= 8) and not (weak_value and seen > 2)
            phrase = bool(_PHRASE.match(value)) and ("phrase" in word or "pass" in word or "パス" in word)
            if strong or phrase:
                out.append((m.end() + start, m.end() + start + len(value)))
                break
            seen += 1
            if seen >= (4 if word in _WEAK else 6):
                break
    return out


# An account and its password side by side: "admin / Gr4fana!2024", "root:Sup3rR00t!".
_ACCOUNT_PAIR = lazy(r"(?i)(?<![\w.@\-/])(?:admin|administrator|root|sa|postgres|ubuntu|pi|user|guest|sysadmin"
                           r"|superuser|operator|deploy|service|svc|ci)(?:[ \t]?/[ \t]*|:)(?P<value>[^\s\"'`,;]{6,})")


def pair_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start("value"), m.end("value")) for m in _ACCOUNT_PAIR.finditer(text) if secretish(m.group("value"))]


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


PROSE_KEYWORDS = tuple(dict.fromkeys(map(keyword_of, PASSWORD_WORDS)))
_ACCOUNTS = ("admin", "administrator", "root", "sa", "postgres", "ubuntu", "pi", "user", "guest", "sysadmin", "superuser",
             "operator", "deploy", "service", "svc", "ci")
PAIR_KEYWORDS = tuple(f"{name}{sep}" for name in _ACCOUNTS for sep in (":", "/", " /"))
CODE_KEYWORDS = ("recovery", "backup", "2fa", "mfa", "one time", "one-time", "emergency", "scratch")
KEYWORDS = (*PROSE_KEYWORDS, *PAIR_KEYWORDS, *CODE_KEYWORDS)
