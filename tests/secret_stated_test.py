"""A value stated for a password word is refused when it reads like a credential, with or without
a digit, and a sentence that describes a password is not.

Both sides are measured: recall over credentials of every shape (letters only in any case,
letters and digits, passphrases of three or four words joined, symbols) in 20 phrasings, and in
28 more that assign a password in other ways (changed to, set to, use V as, V is the password,
the password's, spelled to pass a filter, ``-u root -p V``), and false refusals over ordinary
sentences about passwords and over the real notes of ``../shared/data/memories-real`` (skipped
when absent). Regression tests for docs/security.md.
"""
from __future__ import annotations

import json
import os
import random
import re
import string
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quipu.errors import EXIT_SOME_SKIPPED, SecretRefused
from quipu.store import secrets_scan
from testing.fixtures import REPO_ROOT, make_store, memory, quipu

# Words a passphrase is drawn from (the shape of diceware lists: common nouns and adjectives).
WORDS = ("correct horse battery staple orbit falcon marble copper lantern velvet tiger canyon meadow pickle rocket "
         "saddle thunder violet walnut yellow zebra anchor bridge candle dragon engine forest garden harbor island "
         "jungle kettle ladder mirror needle oyster pepper quartz ribbon silver tunnel umbrella window basket cotton "
         "dinner eagle feather ginger hammer jacket kitten lemon monkey napkin orange parrot rabbit shadow turtle").split()
PASSWORD_PHRASINGS = (
    "The staging admin password is {v}", "password: {v}", "password = {v}", "pw {v}", "the password for staging is {v}",
    "login admin / {v}", "my root pw is {v}", "The db pass is {v}", "passphrase: {v}",
    "Grafana login: user admin, password is {v}", "The wifi password is {v}.", "The passcode is {v}",
    "The VPN password for alice is `{v}` (rotated in May)", "credentials: admin / {v}", "pw is {v}",
    "Passwort: {v}", "Das Passwort ist {v}", "le mot de passe est {v}", "la contraseña es {v}", "a senha é {v}",
)
# How else a sentence gives a password its value: a change, an instruction, the value first, a
# word spelled to pass a filter, a command's flags.
ASSIGNED_PHRASINGS = (
    "The staging root password was changed to {v} yesterday", "set the password to {v} for the admin user",
    "use {v} as the password", "the password's {v}", "the p@ssword is {v}", "the passw0rd is {v}",
    "the pa$$word is {v}", "The PASSWD is {v}", "the pswd is {v}", "the new password: {v}", "{v} is the password",
    "password for staging = {v}", "password now {v}", "log in with password {v}", "mysql -u root -p {v}",
    "mysql -p {v} -u root app", "./deploy.sh --password {v}", "./deploy.sh --password={v}",
    "the admin password has been reset to {v}", "I changed the root password of the db to {v}", "try {v} as password",
    "the password got rotated to {v}", "the vpn password is now {v}", "Reset alice's password to {v}",
    "password changed to {v}", "The password for the admin account on staging has been changed to {v}",
    "the new password will be {v}", "{v} was the old password",
)
# After "token", "secret" or "API key" only a value that reads like no word counts, not a phrase.
KEY_PHRASINGS = ("the api key is {v}", "the token is {v}", "The access token for CI is {v}", "the secret is {v}",
                 "the token was rotated to {v}", "the api key has been reset to {v}", "use {v} as the token")
NOTES = Path(os.environ.get("QUIPU_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data") / "memories-real" / "notes.jsonl"
# The real notes refused before prose passwords without a digit were read (a `docker run -e
# NEO4J_AUTH=neo4j/...` line, by the assignment rule): no more may be refused.
REAL_NOTES_REFUSED_BEFORE = 1


def credentials(seed: int = 7) -> dict[str, list[str]]:
    """Credentials of every shape, drawn at random: 40 of each shape of letters and symbols, 20
    of each way of joining words."""
    rng = random.Random(seed)

    def letters(case: str) -> str:
        text = "".join(rng.choice(string.ascii_lowercase if case != "mixed" else string.ascii_letters)
                       for _ in range(rng.randint(8, 24)))
        return {"lower": text, "upper": text.upper(), "title": text.title(), "mixed": text}[case]

    def symbols() -> str:
        text = [rng.choice(string.ascii_letters + string.digits + "!@#$%^&*?+=") for _ in range(rng.randint(8, 20))]
        text[rng.randrange(len(text))] = rng.choice("!#%&*?")
        return "".join(text)

    def phrase(join: str) -> str:
        words = rng.sample(WORDS, rng.randint(3, 4))
        return "".join(w.title() for w in words) if join == "camel" else join.join(words)

    shapes = {f"letters, {case}": [letters(case) for _ in range(40)] for case in ("lower", "upper", "title", "mixed")}
    shapes["letters and digits"] = ["".join(rng.choice(string.ascii_letters + string.digits)
                                            for _ in range(rng.randint(8, 16))) for _ in range(40)]
    shapes["symbols"] = [symbols() for _ in range(40)]
    for join in ("camel", "-", ""):
        shapes[f"words joined ({join or 'nothing'})"] = [phrase(join) for _ in range(20)]
    return shapes


def caught(text: str, value: str) -> bool:
    """Whether the scanner finds a secret in ``text`` and redacting it leaves none of ``value``."""
    return bool(secrets_scan.find_secrets(text)) and value not in secrets_scan.redact(text)


def recall(values: list[str], phrasings: tuple[str, ...]) -> float:
    return sum(caught(p.format(v=v), v) for v in values for p in phrasings) / (len(values) * len(phrasings))


def test_credentials_of_every_shape_stated_in_twenty_phrasings_are_refused() -> None:
    """Before, 37% of these were refused (letters alone 0-15% by case, passphrases joined 15-53%);
    now every one of this draw is."""
    shares = {shape: recall(values, PASSWORD_PHRASINGS) for shape, values in credentials().items()}
    assert all(share >= 0.95 for share in shares.values()), shares
    assert sum(shares.values()) / len(shares) >= 0.97, shares


def test_credentials_assigned_in_other_ways_are_refused() -> None:
    """Before, 33% of these were refused (letters alone and camel-case phrases 21%, with digits
    58%, with symbols 61%; none of "use V as the password", "V is the password", "the p@ssword
    is V", "mysql -u root -p V"); now every one of this draw is."""
    shares = {shape: recall(values, ASSIGNED_PHRASINGS) for shape, values in credentials().items()}
    assert all(share >= 0.95 for share in shares.values()), shares
    assert sum(shares.values()) / len(shares) >= 0.97, shares


def test_credentials_stated_for_a_token_or_key_are_refused_unless_they_read_as_words() -> None:
    """Before, 9% of these were refused (only values long enough for the key rules); now 99%. Of
    the three phrasings of a change or a use ("rotated to V", "use V as the token"), 6% before."""
    shapes = {shape: values for shape, values in credentials(11).items() if not shape.startswith("words")}
    shares = {shape: recall(values, KEY_PHRASINGS) for shape, values in shapes.items()}
    assert all(share >= 0.9 for share in shares.values()), shares
    phrases = credentials(11)["words joined (camel)"]
    assert recall(phrases, KEY_PHRASINGS) == 0.0  # "the token is ResolveTypeReferences" names a class


@pytest.mark.parametrize("text", [
    "The staging admin password is vKqPzRwTbXmLnYhJ", "Grafana login: user admin, password is SXRVxfCQGgTw",
    "pw is RZJzzzzgEOzdme", "The wifi password is CorrectHorseBatteryStaple", "my root pw is qmvtzrplkxwd",
    "The db pass is QPWZMRTLKXCV", "passphrase: correct-horse-battery-staple", "password = nbvcxzlkjhgf",
    "the password for staging is Wkdhqpzm", "login admin / TpqzRwkmX", "PIN: 482913", "The passcode is 55417",
    "le mot de passe est kqpzRwtbX", "la contraseña es XqpzkwrtM", "a senha é ZmkqwptrL", "Das Passwort lautet bkqpzrwt",
    "The password is kqp!zrwt", "the API key is vKqPzRwTbXmLnYhJ", "The password is password123",
    # what `quipu add` took before
    "The staging root password was changed to vKqPzRwTbXmLnYhJ yesterday",
    "set the password to vKqPzRwTbXmLnYhJ for the admin user", "use vKqPzRwTbXmLnYhJ as the password",
    "the password's vKqPzRwTbXmLnYhJ", "the p@ssword is vKqPzRwTbXmLnYhJ", "the passw0rd is vKqPzRwTbXmLnYhJ",
    "the pa$$word is vKqPzRwTbXmLnYhJ", "the pwd is vKqPzRwTbXmLnYhJ", "the passwd is vKqPzRwTbXmLnYhJ",
    "the password’s vKqPzRwTbXmLnYhJ", "the PIN was changed to 482913", "mysql -u root -p CorrectHorseBatteryStaple",
    "The password has been reset to kqp!zrwt", "password changed to correct-horse-battery-staple",
])
def test_a_stated_credential_without_a_digit_or_in_another_language_is_found(text: str) -> None:
    assert secrets_scan.find_secrets(text), text


# Sentences about passwords, not passwords: the store must take them.
ORDINARY = (
    "the password is stored in vault", "password is required", "the password is rotated monthly",
    "password is in 1Password", "password: see the team vault", "password is the same as staging",
    "password is `$DB_PASSWORD`", "password: ${{ secrets.DB_PASSWORD }}", "password: <your-password>", "password: ****",
    "The password is changeme on a fresh install; change it at first login",
    "The admin password is hashed with bcrypt before it is stored", "The password is never logged",
    "password is optional for local runs", "The staging password is kept in Doppler",
    "the password is managed by Bitwarden", "The database password is generated by Terraform",
    "password is whatever you set in .env", "the wifi password is on the fridge",
    "The password for staging is in the shared vault", "the root pw is in the team's password manager",
    "the db pass is read from the environment", "passphrase: ask the on-call engineer",
    "The passcode is sent by text message", "PIN: ask the office manager", "the token is refreshed every hour",
    "The API key is read from SSM Parameter Store", "the token is a JWT signed with RS256",
    "credentials: see the onboarding doc", "login admin / see vault", "The password is too short",
    "password is case sensitive", "the password is autogenerated", "the password is hardcoded in the test fixture",
    "the password must be at least twelve characters", "password is misconfigured on staging",
    "The password is plaintext in the old config, which is why we rotated it", "password = None",
    "password = os.environ['PGPASSWORD']", "password = getpass.getpass()", "The password is encrypted at rest",
    "password is empty by default", "Passwort: siehe Tresor", "le mot de passe est obligatoire",
    "la contraseña es incorrecta", "a senha está no cofre", "Das Passwort ist verschlüsselt",
    "The token is consumed by the parser", "the secret is mounted as a file", "password was reset yesterday",
    "The password is passwordless now: we use passkeys", "the password is whatever Keycloak issues",
    "The password is configurable through QUIPU_DB_PASSWORD", "the token is JsxIdentifier",
    "The next token is RightParen", "the secret is named db-credentials", "The secret is kubernetes-managed",
    "the token is localStorage-backed", "the first pass is ResolveTypeReferences", "the login is handled by Keycloak",
    "The password is Terraform-managed", "The password is Kubernetes-injected", "password is gitignored",
    "the password is SSO-only", "password is OAuth-based", "the password is SAML-federated", "The token is HMAC-signed",
    "the token is JWT-encoded", "the API key is S3-compatible", "The MySQL password is mysql_native_password",
    "password: use the one from staging", "the password is Vaultwarden-stored", "password length: 16",
    "user:password@host is the URL form", "admin / moderator roles are separate", "The PIN is four digits",
    "the token is refreshed by the AuthInterceptor", "the secret is injected by ExternalSecrets",
    "password is Argon2id-hashed", "the password is base64-encoded", "**password**: see the team vault",
    # a change, an instruction or a use that is no password
    "the password was changed to the new policy", "set the password to something long",
    "use a passphrase as the password", "the password's length must be 12", "rotate the password to comply",
    "changed to use the vault", "the password was changed to use the vault", "set the password to never expire",
    "change your password to something memorable", "reset the password to the default",
    "the password got reset to the factory default", "use your SSO credentials as the password",
    "use the API token as the password", "Use GITHUB_TOKEN as the password", "use $CI_JOB_TOKEN as the password",
    "the password's hash is stored with a salt", "password's been rotated", "the password was updated to include symbols",
    "set the password to at least 12 characters", "set the password to DJANGO_SUPERUSER_PASSWORD",
    "the password has been switched to Keycloak", "Grafana's admin password resets to admin on restart",
    "the password was rotated to invalidate old sessions", "the password was set to expire after 90 days",
    "password now required for all users", "password now lives in 1Password", "the password was changed to a stronger one",
    "Set password to noexpire", "set the password to NOPASSWD for sudo", "the password was updated to bcrypt hashing",
    "changed the password to sha512crypt", "the password is now bcrypt-hashed", "set the password to empty",
    "reset the password to the one in the runbook", "the password was changed to match production",
    "htpasswd is the password file format", "use htpasswd for the password", "use xkcdpass for the password",
    "PGPASSWORD is the password for psql", "Bitwarden is the password manager", "use Kubernetes as the password store",
    "What is the password for staging?", "This is the password policy we agreed on",
    "the p@ssword placeholder is masked in logs", "pa$$word is the classic example of a weak password",
    "pwd prints the working directory", "the passwd file is /etc/passwd", "passwd alice resets her password",
    "the admin password was changed to the value in Vault", "use the generated value as the password",
    "the password must be changed to continue", "the token was rotated by the operator", "use the PAT as the token",
    "mysql -u root -p", "mysql -u root -p -h db.internal", "docker run -u 1000 -p 8080:80/tcp nginx",
    "psql -U postgres -p 5433 -d app", "docker run --user app -p 127.0.0.1:5432:5432 postgres",
    "python -u train.py -p configs/base.yaml", "mysql -u root -p staging",
)


def test_ordinary_sentences_about_passwords_are_not_refused() -> None:
    """Before: 6 of these were refused ("configurable through QUIPU_DB_PASSWORD", "SSO-only",
    "OAuth-based", "SAML-federated", "Argon2id-hashed", "base64-encoded"); now none, nor of the
    changes, instructions and commands that state no password."""
    assert len(ORDINARY) >= 30
    refused = [text for text in ORDINARY if secrets_scan.find_secrets(text)]
    assert refused == []


ORDINARY_WORDS = ("stored", "required", "rotated", "hashed", "encrypted", "temporary", "expired", "optional",
                  "unchanged", "shared", "invalid", "incorrect", "forgotten", "outdated", "deprecated", "configurable",
                  "hardcoded", "gitignored", "autogenerated", "misconfigured", "plaintext", "passwordless", "sensitive",
                  "auto-generated", "user-defined", "case-sensitive", "write-only", "Kubernetes", "Terraform",
                  "Keycloak", "obligatoire", "incorrecta", "obrigatoria", "unencrypted", "regenerated", "centralized")


# "password: V" and "password = V" are also how config sets a password: there any value that is
# not a placeholder or a reference is one, a word too (the assignment rule, as before).
PROSE_PHRASINGS = tuple(p for p in PASSWORD_PHRASINGS + ASSIGNED_PHRASINGS + KEY_PHRASINGS
                        if ": {v}" not in p and "= {v}" not in p and "--password" not in p)


@settings(max_examples=300, deadline=None)
@given(word=st.sampled_from(ORDINARY_WORDS), case=st.sampled_from([str.lower, str.title, str.upper, str]),
       phrasing=st.sampled_from(PROSE_PHRASINGS))
def test_an_ordinary_word_stated_for_a_password_is_not_refused(word: str, case: object, phrasing: str) -> None:
    text = phrasing.format(v=case(word))  # type: ignore[operator]
    assert secrets_scan.find_secrets(text) == [], text


def test_a_word_set_as_a_password_in_config_form_is_still_refused() -> None:
    assert secrets_scan.find_secrets("password: dragonfly") and secrets_scan.find_secrets('password = "dragonfly"')


@settings(max_examples=200, deadline=None)
@given(name=st.from_regex(r"[A-Z]{2,8}(?:_[A-Z]{2,8}){0,2}", fullmatch=True), template=st.sampled_from([
    "password is ${{{name}}}", "password: `${name}`", "password = ${{{{ secrets.{name} }}}}", "the token is <{lower}>",
    "the password is <your-{lower}>", "pw: %{name}%", "The API key is {{{{ .Values.{lower} }}}}"]))
def test_a_placeholder_or_a_reference_stated_for_a_password_is_not_refused(name: str, template: str) -> None:
    text = template.format(name=name, lower=name.lower())
    assert secrets_scan.find_secrets(text) == [], text


@settings(max_examples=300, deadline=None)
@given(value=st.text(string.ascii_letters + string.digits + "!#%&*?", min_size=8, max_size=24).filter(
    lambda v: not v.isalpha()), phrasing=st.sampled_from(PASSWORD_PHRASINGS + ASSIGNED_PHRASINGS))  # no word of its own
def test_a_refusal_never_shows_the_password(value: str, phrasing: str) -> None:
    text = phrasing.format(v=value)
    try:
        secrets_scan.refuse_secrets({"memories/ab/note.md": text.encode()}, "quipu: add note")
    except SecretRefused as refused:
        assert value not in str(refused)
        assert re.findall(r"(\S*)…\(\d+ chars\)", str(refused)) == [""], str(refused)  # not even its first letters


def everything_in(root: Path) -> bytes:
    objects = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    log = subprocess.run(["git", "-C", str(root), "log", "-p", "--all", "--format=%B"], capture_output=True, check=True)
    return objects + log.stdout


def test_the_found_passwords_reach_neither_the_store_nor_its_history(tmp_path: Path) -> None:
    """The finding: `quipu add` took these, and `supersede --reason` kept its password in the event."""
    store = make_store(tmp_path / "store")
    store.add(memory("deploy-old", "Old deploy note", "Deploys go through CI."))
    store.add(memory("deploy-new", "New deploy note", "Deploys go through CI and a canary."))
    values = ("vKqPzRwTbXmLnYhJ", "SXRVxfCQGgTw", "RZJzzzzgEOzdme")
    for text, title in ((f"The staging admin password is {values[0]}", "staging admin"),
                        (f"Grafana login: user admin, password is {values[1]}", "grafana")):
        added = quipu("--store", str(store.root), "add", text, "--title", title)
        assert added.returncode == 1 and "password-prose" in added.stderr, added.stderr
        assert not any(v in added.stdout + added.stderr for v in values)
    done = quipu("--store", str(store.root), "supersede", "deploy-old", "deploy-new", "--reason", f"pw is {values[2]}")
    assert done.returncode == 0, done.stderr
    history = everything_in(store.root)
    assert b"[REDACTED:password-prose]" in history
    assert [v for v in values if v.encode() in history] == []


AUDITED = ("The staging root password was changed to vKqPzRwTbXmLnYhJ yesterday",
           "set the password to BknNptLctQwrz for the admin user", "use TpqzRwkmXvbn as the password",
           "the password's QPWZMRTLKXCVB", "the p@ssword is nbvcxzlkjhgfq")


def test_a_password_assigned_in_prose_reaches_neither_the_store_nor_its_history(tmp_path: Path) -> None:
    """The finding: `quipu add` and `quipu import markdown` took each of these."""
    store = make_store(tmp_path / "store")
    values = ("vKqPzRwTbXmLnYhJ", "BknNptLctQwrz", "TpqzRwkmXvbn", "QPWZMRTLKXCVB", "nbvcxzlkjhgfq")
    assert all(v in text for v, text in zip(values, AUDITED, strict=True))
    for n, text in enumerate(AUDITED):
        added = quipu("--store", str(store.root), "add", text, "--title", f"note {n}")
        assert added.returncode == 1 and "password-prose" in added.stderr, (text, added.stderr)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "staging.md").write_text("# Staging access\n\n" + "\n".join(f"- {t}" for t in AUDITED) + "\n")
    (notes / "policy.md").write_text("# Password policy\n\nThe password was changed to the new policy; "
                                     "use a passphrase as the password.\n")
    done = quipu("--store", str(store.root), "import", "markdown", str(notes))
    assert done.returncode == EXIT_SOME_SKIPPED and "skipped staging.md" in done.stdout, done.stdout + done.stderr
    history = everything_in(store.root)
    assert b"use a passphrase as the password" in history  # the ordinary note got in
    assert [v for v in values if v.encode() in history] == []
    assert not any(v in done.stdout + done.stderr for v in values)


def test_the_real_notes_are_refused_no_more_than_before() -> None:
    if not NOTES.is_file():
        pytest.skip(f"the real notes are not here ({NOTES}): put ../shared/data/memories-real beside the repository "
                    "or set QUIPU_SHARED_DATA")
    notes = [json.loads(line) for line in NOTES.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [f"{note['title']}\n\n{note['body']}" for note in notes]
    found = [secrets_scan.find_secrets(text) for text in texts]
    refused = [text for text, spans in zip(texts, found, strict=True) if spans]
    assert len(texts) > 1_000 and len(refused) <= REAL_NOTES_REFUSED_BEFORE, refused
    assert not any(s.kind in ("password-prose", "password-pair", "stated-secret") for spans in found for s in spans), refused
