"""A corpus of secret forms and benign look-alikes, made at run time for tests and benchmarks.

Every secret value is drawn here from a seeded generator, in the alphabet and length of the
provider's published shape (the rule lists of gitleaks and trufflehog) or of a password a person
types, and joined to its prefix at run time: the repository holds no token, only its recipe.

Contract:
- ``secret_cases(seed)`` returns ``Case(family, text, values)`` for 200+ forms, in families
  (``provider``, ``keyword``, ``assignment``, ``url``, ``key-block``, ``cli``, ``prose``,
  ``phrase``, ``entropy``); ``values`` are the substrings that must never reach a store.
- ``benign_cases(seed)`` returns 150+ ``Case(family, text, ())`` that look like secrets and are
  not (hashes, ids, public keys, data URIs, documented example keys, variable names, placeholders).
- The same seed gives the same corpus.
"""
from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from typing import NamedTuple

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = UPPER + "234567"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
WORDS = ("orbit", "maple", "velvet", "canyon", "ember", "quartz", "harbor", "lantern", "meadow", "pixel", "thunder",
         "willow", "saddle", "copper", "falcon", "glacier", "nectar", "pepper", "ribbon", "tundra", "walnut", "zephyr")


class Case(NamedTuple):
    family: str
    text: str
    values: tuple[str, ...]


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        """Random text of ``n`` characters with at least one digit when the alphabet has digits."""
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            if n < 8 or not any(c in DIGITS for c in alphabet) or any(c in DIGITS for c in out):
                return out

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def password(self) -> str:
        word = self.rng.choice(WORDS)
        return f"{word.capitalize()}{self.rng.choice('-_.#!@')}{self.s(ALNUM, 4)}{self.rng.randint(10, 99)}"

    def words(self, n: int, sep: str = "-") -> str:
        return sep.join(self.rng.sample(WORDS, n))


# (rule, prefix, alphabet, length, suffix): the published shape of a provider's token.
_PREFIXED: tuple[tuple[str, str, str, int, str], ...] = (
    ("anthropic", "sk-" + "ant-api03-", B64URL, 93, "AA"), ("anthropic-admin", "sk-" + "ant-admin01-", B64URL, 93, "AA"),
    ("openai", "sk-" + "proj-", B64URL, 48, ""), ("openai-legacy", "sk-", ALNUM, 20, ""),
    ("github-pat", "gh" + "p_", ALNUM, 36, ""), ("github-oauth", "gh" + "o_", ALNUM, 36, ""),
    ("github-app", "gh" + "s_", ALNUM, 36, ""), ("github-refresh", "gh" + "r_", ALNUM, 36, ""),
    ("github-fine-grained", "github" + "_pat_", ALNUM + "_", 82, ""), ("gitlab-pat", "gl" + "pat-", B64URL, 20, ""),
    ("gitlab-deploy", "gl" + "dt-", B64URL, 20, ""), ("gitlab-runner", "gl" + "rt-", B64URL, 20, ""),
    ("gitlab-trigger", "gl" + "ptt-", HEX, 40, ""), ("huggingface", "h" + "f_", LOWER + UPPER, 34, ""),
    ("huggingface-org", "api" + "_org_", LOWER + UPPER, 34, ""), ("newrelic-user", "NR" + "AK-", UPPER + DIGITS, 27, ""),
    ("newrelic-insert", "NR" + "II-", B64URL, 32, ""), ("newrelic-browser", "NR" + "JS-", HEX, 19, ""),
    ("postman", "PM" + "AK-", HEX, 24, ""), ("shopify-access", "sh" + "pat_", HEX, 32, ""),
    ("shopify-custom", "sh" + "pca_", HEX, 32, ""), ("shopify-private", "sh" + "ppa_", HEX, 32, ""),
    ("shopify-shared", "sh" + "pss_", HEX, 32, ""), ("slack-bot", "xo" + "xb-", DIGITS, 12, ""),
    ("slack-user", "xo" + "xp-", DIGITS, 12, ""), ("slack-app", "xa" + "pp-1-", UPPER + DIGITS, 11, ""),
    ("stripe-live", "sk" + "_live_", ALNUM, 48, ""), ("stripe-restricted", "rk" + "_live_", ALNUM, 48, ""),
    ("stripe-webhook", "wh" + "sec_", ALNUM, 32, ""), ("gcp-api-key", "AI" + "za", B64URL, 35, ""),
    ("aws-access-key", "AK" + "IA", B32, 16, ""), ("aws-session-key", "AS" + "IA", B32, 16, ""),
    ("sendgrid", "S" + "G.", B64URL, 22, ""), ("npm", "np" + "m_", ALNUM, 36, ""),
    ("pypi", "pypi-" + "AgEIcHlwaS5vcmc", B64URL, 70, ""), ("rubygems", "rubygems" + "_", HEX, 48, ""),
    ("nuget", "oy2", LOWER + DIGITS, 43, ""), ("doppler", "dp" + ".pt.", ALNUM, 43, ""),
    ("vault-service", "hv" + "s.", B64URL, 90, ""), ("vault-batch", "hv" + "b.", B64URL, 140, ""),
    ("terraform", "", ALNUM, 14, ""), ("digitalocean", "dop" + "_v1_", HEX, 64, ""),
    ("digitalocean-oauth", "do" + "o_v1_", HEX, 64, ""), ("databricks", "dap" + "i", HEX, 32, ""),
    ("dynatrace", "dt0" + "c01.", UPPER + DIGITS, 24, ""), ("easypost", "EZ" + "AK", ALNUM, 54, ""),
    ("flutterwave", "FLWSECK" + "_TEST-", HEX, 32, ""), ("frameio", "fio" + "-u-", B64URL, 64, ""),
    ("grafana-cloud", "gl" + "c_", B64URL, 40, ""), ("grafana-sa", "gl" + "sa_", ALNUM, 32, "_1a2b3c4d"),
    ("linear", "lin" + "_api_", ALNUM, 40, ""), ("mapbox", "pk" + ".eyJ1Ijoi", ALNUM, 60, ""),
    ("notion", "ntn" + "_", DIGITS, 11, ""), ("planetscale", "pscale" + "_tkn_", B64URL, 43, ""),
    ("prefect", "pn" + "u_", ALNUM, 36, ""), ("pulumi", "pu" + "l-", HEX, 40, ""),
    ("readme", "rdme" + "_", LOWER + DIGITS, 70, ""), ("sentry-user", "sntry" + "u_", HEX, 64, ""),
    ("shippo", "shippo" + "_live_", HEX, 40, ""), ("snyk", "", HEX, 0, ""),
    ("sourcegraph", "sg" + "p_", HEX, 40, ""), ("square", "EAAA", B64URL, 60, ""),
    ("twilio-key", "S" + "K", HEX, 32, ""), ("age", "AGE-SECRET-" + "KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, ""),
    ("1password-token", "op" + "s_eyJ", B64, 260, ""), ("artifactory", "AK" + "Cp", ALNUM, 69, ""),
    ("atlassian", "ATATT" + "3", B64URL, 186, ""), ("clojars", "CLOJARS" + "_", LOWER + DIGITS, 60, ""),
    ("fly", "FlyV1 " + "fm2_", B64URL, 80, ""), ("infracost", "ico" + "-", ALNUM, 32, ""),
    ("octopus", "API" + "-", UPPER + DIGITS, 26, ""), ("openshift", "sha256" + "~", B64URL, 43, ""),
    ("perplexity", "pplx" + "-", ALNUM, 48, ""), ("scalingo", "tk-us" + "-", B64URL, 48, ""),
    ("settlemint", "sm_pat" + "_", LOWER + DIGITS, 16, ""), ("sumologic", "su", ALNUM, 12, ""),
    ("telegram", "", DIGITS, 10, ""), ("discord-webhook", "https://discord.com/api/" + "webhooks/", DIGITS, 18, ""),
    ("slack-webhook", "https://hooks.slack.com/" + "services/T", UPPER + DIGITS, 10, ""),
    ("groq", "gs" + "k_", ALNUM, 52, ""), ("xai", "xa" + "i-", ALNUM, 80, ""),
    ("deepseek", "sk-", HEX, 32, ""), ("langsmith", "lsv2" + "_pt_", HEX, 32, "_0a1b2c3d4e"),
    ("replicate", "r8" + "_", ALNUM, 37, ""), ("mailgun", "key" + "-", HEX, 32, ""),
    ("azure-ad-secret", "", ALNUM, 3, ""), ("adobe", "p8" + "e-", ALNUM, 32, ""),
    ("alibaba", "LT" + "AI", ALNUM, 20, ""), ("clickhouse", "4b1" + "d", ALNUM, 38, ""),
    ("duffel", "duffel" + "_live_", B64URL, 43, ""), ("typeform", "tf" + "p_", B64URL, 44, ""),
    ("launchdarkly", "api" + "-", HEX, 8, ""), ("heroku-v2", "HRKU" + "-AA", B64URL, 58, ""),
)
_SENTENCES = ("The {rule} token for the staging bot is {v}", "{v}", "export TOKEN={v}",
              "I pasted {v} into the CI settings yesterday", "use `{v}` for the {rule} account",
              "key: {v}", "the new {rule} credential ({v}) replaces the old one")


def _provider(g: _Gen) -> list[Case]:
    out = []
    for n, (rule, prefix, alphabet, length, suffix) in enumerate(_PREFIXED):
        if rule == "slack-bot":
            v = f"{prefix}{g.s(DIGITS, 12)}-{g.s(DIGITS, 13)}-{g.s(ALNUM, 24)}"
        elif rule == "slack-user":
            v = f"{prefix}{g.s(DIGITS, 12)}-{g.s(DIGITS, 12)}-{g.s(DIGITS, 13)}-{g.s(HEX, 32)}"
        elif rule == "slack-app":
            v = f"{prefix}{g.s(alphabet, 11)}-{g.s(DIGITS, 13)}-{g.s(HEX, 64)}"
        elif rule == "postman":
            v = f"{prefix}{g.s(HEX, 24)}-{g.s(HEX, 34)}"
        elif rule == "sendgrid":
            v = f"{prefix}{g.s(B64URL, 22)}.{g.s(B64URL, 43)}"
        elif rule == "terraform":
            v = f"{g.s(ALNUM, 14)}.atlasv1.{g.s(B64URL, 67)}"
        elif rule == "dynatrace":
            v = f"{prefix}{g.s(alphabet, 24)}.{g.s(UPPER + DIGITS, 64)}"
        elif rule == "snyk":
            v = g.uuid()
            out.append(Case("keyword", f"SNYK_TOKEN={v}", (v,)))
            continue
        elif rule == "telegram":
            v = f"{g.s(DIGITS, 10)}:AA{g.s(B64URL, 33)}"
        elif rule == "discord-webhook":
            v = f"{prefix}{g.s(DIGITS, 18)}/{g.s(B64URL, 68)}"
        elif rule == "slack-webhook":
            v = f"{prefix}{g.s(alphabet, 10)}/B{g.s(alphabet, 10)}/{g.s(ALNUM, 24)}"
        elif rule == "azure-ad-secret":
            v = f"{g.s(ALNUM, 3)}8Q~{g.s(ALNUM + '_~.-', 34)}"
        elif rule == "launchdarkly":
            v = f"{prefix}{g.s(HEX, 8)}-{g.s(HEX, 4)}-{g.s(HEX, 4)}-{g.s(HEX, 4)}-{g.s(HEX, 12)}"
        elif rule == "mapbox":
            v = f"{prefix}{g.s(ALNUM, 60)}.{g.s(B64URL, 22)}"
        elif rule == "openai-legacy":
            v = f"sk-{g.s(ALNUM, 20)}T3BlbkFJ{g.s(ALNUM, 20)}"
        elif rule == "notion":
            v = f"{prefix}{g.s(DIGITS, 11)}{g.s(ALNUM, 35)}"
        elif rule == "sumologic":
            v = g.s(ALNUM, 64)
            out.append(Case("keyword", f"sumologic access key: {v}", (v,)))
            continue
        elif rule == "flutterwave":
            v = f"{prefix}{g.s(HEX, 32)}-X"
        else:
            v = prefix + g.s(alphabet, length) + suffix
        sentence = _SENTENCES[n % len(_SENTENCES)]
        out.append(Case("provider", sentence.format(rule=rule, v=v), (v,)))
    return out


def _keyword(g: _Gen) -> list[Case]:
    """Keys shaped like ordinary identifiers, told apart only by the words next to them."""
    hx32, hx40, u = (lambda: g.s(HEX, 32)), (lambda: g.s(HEX, 40)), g.uuid
    forms = [
        ("HEROKU_API_KEY={v}", u), ("The Heroku API key is {v}", u), ("heroku api key: {v}", u),
        ("github token {v}", hx40), ("GITHUB_TOKEN={v}", hx40), ("the github oauth token is {v} for the bot", hx40),
        ("DATADOG_API_KEY={v}", hx32), ("datadog app key: {v}", lambda: g.s(HEX, 40)),
        ("algolia admin key {v}", hx32), ("the mailgun api key is {v}", hx32), ("MAILCHIMP_KEY={v}", lambda: hx32() + "-us14"),
        ("twilio auth token: {v}", hx32), ("TWILIO_AUTH_TOKEN = \"{v}\"", hx32), ("facebook app secret {v}", hx32),
        ("new relic license key {v}", lambda: g.s(HEX, 36) + "NRAL"), ("asana personal access token {v}", lambda: "1/" + g.s(DIGITS, 16) + ":" + hx32()),
        ("bitbucket client secret: {v}", lambda: g.s(B64URL, 64)), ("confluent api secret {v}", lambda: g.s(ALNUM, 64)),
        ("cloudflare api token = {v}", lambda: g.s(B64URL, 40)), ("CLOUDFLARE_API_KEY={v}", lambda: g.s(HEX, 37)),
        ("sentry auth token {v}", lambda: g.s(HEX, 64)), ("the okta api token is {v}", lambda: "00" + g.s(B64URL, 40)),
        ("TOTP seed: {v}", lambda: g.s(B32, 32)), ("2fa secret for the admin account is {v}", lambda: g.s(B32, 16)),
        ("the authenticator setup key {v}", lambda: " ".join(g.s(B32, 4).lower() for _ in range(8))),
        ("2FA key: {v}", lambda: " ".join(g.s(B32, 4).lower() for _ in range(8))),
        ("my recovery key: {v}", lambda: "-".join(g.s(UPPER + DIGITS, 4) for _ in range(6))),
        ("otpauth://totp/Acme:ops?secret={v}&issuer=Acme", lambda: g.s(B32, 32)),
        ("azure storage AccountKey={v}", lambda: g.s(B64, 86) + "=="),
        ("aws_secret_access_key = {v}", lambda: g.s(B64, 40)), ("The AWS secret for the deploy user is {v}", lambda: g.s(B64, 40)),
        ("wireguard PrivateKey = {v}", lambda: g.s(B64, 43) + "="), ("django SECRET_KEY = '{v}'", lambda: g.s(ALNUM + "!@#%^&*(-_=+)", 50)),
        ("client_secret: {v}", lambda: g.s(B64URL, 32)), ("consumer secret {v}", lambda: g.s(ALNUM, 50)),
        ("the webhook signing secret is {v}", lambda: g.s(HEX, 64)), ("encryption key: {v}", lambda: g.s(B64, 43) + "="),
        ("JWT_SECRET={v}", lambda: g.s(HEX, 64)), ("session secret {v}", lambda: g.s(ALNUM, 32)),
        ("license key {v}", lambda: "-".join(g.s(UPPER + DIGITS, 5) for _ in range(5))),
        ("the api key for the weather service is {v}", hx32), ("Authorization: Bearer {v}", lambda: g.s(B64URL, 40)),
        ("Authorization: Basic {v}", lambda: base64.b64encode(f"deploy:{g.password()}".encode()).decode()),
        ("curl -H 'X-API-Key: {v}' https://api.example.net/v1", hx32),
        ("curl -H \"Authorization: token {v}\" https://api.github.com/user", hx40),
        ("PRIVATE-TOKEN: {v}", lambda: g.s(B64URL, 20)), ("x-api-key={v}", lambda: g.s(ALNUM, 40)),
        ("heroku: {v}", u), ("HEROKU={v}", u), ("github: {v}", hx40), ("kucoin {v}", lambda: g.s(HEX, 24)),
        ("hubspot = {v}", lambda: u().upper()), ("linear client {v}", hx32), ("intercom => '{v}'", lambda: g.s(B64URL, 60)),
        ("the zendesk one is {v}", lambda: g.s(ALNUM, 40)), ("dropbox: {v}", lambda: "sl." + g.s(B64URL, 135)),
    ]
    out = []
    for template, make in forms:
        v = make()
        out.append(Case("keyword", template.format(v=v), (v,)))
    return out


def _assignment(g: _Gen) -> list[Case]:
    out = []
    for template in ("DB_PASSWORD={v}", "password: {v}", "\"password\": \"{v}\"", "spring.datasource.password={v}",
                     "<password>{v}</password>", "REDIS_PASSWORD='{v}'", "pass = {v}", "passwd={v}",
                     "admin_pass: \"{v}\"", "SMTP_PASS={v}", "export MYSQL_ROOT_PASSWORD={v}",
                     "$env:DB_PASS = \"{v}\"", "set PGPASSWORD={v}", "requirepass {v}", "masterauth {v}",
                     "ansible_become_pass: {v}", "[client]\nuser=app\npassword={v}", "secret: {v}",
                     "KEYSTORE_PASS={v}", "proxy_password = {v}"):
        v = g.password()
        out.append(Case("assignment", template.format(v=v), (v,)))
    return out


def _url(g: _Gen) -> list[Case]:
    out = []
    for scheme, host in (("postgres", "db.internal:5432/shop"), ("mysql", "10.0.0.5/orders"),
                         ("mongodb+srv", "cluster0.ab1cd.mongodb.net/prod"), ("redis", "cache:6379/0"),
                         ("amqp", "mq.internal:5672/"), ("https", "git.internal/team/repo.git"),
                         ("ftp", "files.internal/pub"), ("smtp", "mail.internal:587")):
        v = g.password()
        out.append(Case("url", f"connect with {scheme}://app:{v}@{host}", (v,)))
    v = g.password()
    out.append(Case("url", f"Server=db;Database=app;User Id=sa;Password={v};", (v,)))
    v = g.s(ALNUM, 40)
    out.append(Case("url", f"pip install --index-url https://__token__:{v}@pypi.internal/simple pkg", (v,)))
    return out


def _key_blocks(g: _Gen) -> list[Case]:
    out = []
    for label in ("RSA ", "EC ", "OPENSSH ", "", "DSA ", "ENCRYPTED "):
        body = "\n".join(g.s(B64, 64) for _ in range(3))
        v = f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----"
        out.append(Case("key-block", f"the deploy key:\n{v}", (body.splitlines()[0],)))
    body = g.s(B64, 64)
    out.append(Case("key-block", f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n", (body,)))
    pem = base64.b64encode(f"-----BEGIN PRIVATE KEY-----\n{g.s(B64, 40)}".encode()).decode()
    out.append(Case("key-block", f"PRIVATE_KEY_B64={pem}", (pem,)))
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = base64.urlsafe_b64encode(f'{{"sub":"{g.s(DIGITS, 8)}","role":"admin"}}'.encode()).decode().rstrip("=")
    jwt = f"{head}.{claims}.{g.s(B64URL, 43)}"
    out.append(Case("key-block", f"admin session cookie {jwt}", (jwt,)))
    return out


def _cli(g: _Gen) -> list[Case]:
    forms = ("sshpass -p {v} ssh deploy@web1", "sshpass -p '{v}' scp dump.sql backup@nas:/vol1",
             "curl -u admin:{v} https://jenkins.internal/api/json", "curl --user ci:{v} -X POST https://nexus.internal",
             "docker login -u deploy -p {v} registry.internal", "docker login --password {v} ghcr.io",
             "echo '{v}' | docker login --username bot --password-stdin", "redis-cli -h cache -a {v} ping",
             "openssl pkcs12 -in cert.p12 -passin pass:{v} -out cert.pem", "openssl rsa -in k.pem -passout pass:{v}",
             "ldapsearch -x -D cn=admin,dc=corp -w {v} -b dc=corp", "mysql -u root -p{v} orders",
             "mysqldump -uroot --password={v} shop > shop.sql", "PGPASSWORD={v} psql -h db -U app",
             "mongosh -u admin -p {v} --authenticationDatabase admin", "sqlcmd -S db -U sa -P {v}",
             "keytool -importcert -keystore ks.jks -storepass {v}", "zip -P {v} backup.zip notes.txt",
             "7z a -p{v} secrets.7z docs", "ipmitool -I lanplus -H bmc1 -U admin -P {v} power status",
             "smbclient //nas/share -U backup%{v}", "htpasswd -b .htpasswd admin {v}",
             "net use Z: \\\\fs\\share {v} /user:CORP\\svc", "xfreerdp /u:admin /p:{v} /v:win1",
             "plink -ssh root@router -pw {v}", "wget --user=ci --password={v} https://files.internal/a.tgz",
             "gpg --batch --passphrase {v} -d vault.gpg", "helm repo add corp https://charts.internal --password {v}",
             "nmcli dev wifi connect Office password {v}", "vault login {v}", "kubectl --token={v} get pods",
             "rdesktop -u admin -p {v} win2", "az login -u ops@corp.example -p {v}", "unzip -P {v} archive.zip",
             "curl --user=ci:{v} https://ci.internal", "echo {v} | sudo -S systemctl restart app",
             "openssl enc -d -aes256 -k {v} -in db.enc", "sqlplus scott/{v}@orcl", "htpasswd -nbB admin {v}",
             "psexec \\\\host -u admin -p {v} cmd")
    out = []
    for n, template in enumerate(forms):
        v = g.password() if n % 3 else g.s(ALNUM, 10) + g.rng.choice("!#%")
        if template.startswith("vault login"):
            v = "hvs." + g.s(B64URL, 24)
        out.append(Case("cli", template.format(v=v), (v,)))
    return out


# (language, sentence): a password told in prose.
_PROSE = (
    ("en", "my db password is {v}"), ("en", "the root password for the NAS is now {v}"), ("en", "db pass {v}"),
    ("en", "password {v}"), ("en", "the wifi passphrase: {v}"), ("en", "login is admin / {v}"),
    ("en", "the pass phrase {v} unlocks the backup"), ("en", "pw for the router: {v}"),
    ("de", "das Passwort für den Server lautet {v}"), ("de", "mein Kennwort ist {v}"),
    ("fr", "le mot de passe est {v}"), ("es", "la contraseña del servidor es {v}"), ("es", "la clave del wifi es {v}"),
    ("pt", "a senha do banco é {v}"), ("it", "la password del database è {v}"), ("nl", "het wachtwoord is {v}"),
    ("ru", "пароль от сервера: {v}"), ("uk", "пароль до бази {v}"), ("tr", "sunucu şifresi: {v}"), ("pl", "hasło do bazy to {v}"),
    ("sv", "lösenordet är {v}"), ("no", "passordet er {v}"), ("no", "passord til ruteren: {v}"), ("da", "adgangskoden er {v}"),
    ("fi", "salasana on {v}"), ("fi", "palvelimen salasana: {v}"), ("cs", "heslo je {v}"), ("cs", "heslo k serveru: {v}"),
    ("sk", "heslo na wifi je {v}"), ("hu", "a jelszó {v}"), ("ro", "parola este {v}"), ("el", "ο κωδικός είναι {v}"),
    ("ja", "パスワードは{v}です"), ("ja", "サーバーのパスワード：{v}"), ("ja", "DBのパスワードは {v} です"),
    ("zh", "密码是{v}"), ("zh", "数据库密码：{v}"), ("zh-tw", "伺服器密碼是 {v}"), ("ko", "비밀번호는 {v}입니다"),
    ("ko", "서버 비밀번호: {v}"), ("ko", "암호는 {v} 입니다"), ("vi", "mật khẩu là {v}"), ("id", "kata sandi wifi: {v}"),
    ("ar", "كلمة المرور هي {v}"), ("he", "הסיסמה היא {v}"), ("hi", "पासवर्ड है {v}"), ("th", "รหัสผ่านคือ {v}"),
    ("hr", "lozinka je {v}"), ("et", "parool on {v}"), ("cs", "Heslem k serveru je {v}"), ("ru", "паролем был {v}"),
    ("fi", "salasanan vaihdoin: {v}"), ("pl", "Hasłem jest {v}"), ("sv", "lösenordet till wifi: {v}"),
    ("no", "Passordet til databasen er {v}"), ("da", "adgangskoden til serveren er {v}"), ("de", "Passwörter: {v}"),
    ("no", "Wifi-passordet er {v}"), ("de", "Das WLAN-Passwort lautet {v}"), ("en", "root:{v} is the login for the old box"),
    ("en", "admin / {v} for grafana"), ("ko", "서버 비번: {v}"),
)


def _prose(g: _Gen) -> list[Case]:
    out = []
    for n, (_lang, sentence) in enumerate(_PROSE):
        v = g.password() if n % 4 else g.s(LOWER, 6) + g.rng.choice("123456789") + g.rng.choice("!-_") + g.s(UPPER, 3)
        out.append(Case("prose", sentence.format(v=v), (v,)))
    for text in ("password hunter2-Zebra!", "db pass Tr0ub4dorAndThree", "the pass phrase Purple-Monkey-Dishwasher-42"):
        out.append(Case("prose", text, (text.split()[-1],)))
    return out


def _phrases(g: _Gen) -> list[Case]:
    out = []
    for template in ("the passphrase is {v}", "vault unlock passphrase: {v}", "master password {v}",
                     "ssh key passphrase = {v}", "the password is `{v}`", "パスフレーズは {v}"):
        v = g.words(5)
        out.append(Case("phrase", template.format(v=v), (v,)))
    v = g.words(12, " ")
    out.append(Case("phrase", f"wallet seed phrase: {v}", (v,)))
    v = g.words(5, " ")
    out.append(Case("phrase", f"the passphrase is {v}", (v,)))
    v = g.words(6, " ")
    out.append(Case("phrase", f"the recovery phrase is \"{v}\"", (v,)))
    v = f"A3-{g.s(UPPER + DIGITS, 6)}-{g.s(UPPER + DIGITS, 6)}-{g.s(UPPER + DIGITS, 5)}-{g.s(UPPER + DIGITS, 5)}-{g.s(UPPER + DIGITS, 5)}-{g.s(UPPER + DIGITS, 5)}"
    out.append(Case("phrase", f"1Password secret key {v}", (v,)))
    v = f"A3-{g.s(UPPER + DIGITS, 6)}-{g.s(UPPER + DIGITS, 11)}-{g.s(UPPER + DIGITS, 5)}-{g.s(UPPER + DIGITS, 5)}-{g.s(UPPER + DIGITS, 5)}"
    out.append(Case("phrase", v, (v,)))
    codes = [f"{g.s(LOWER + DIGITS, 5)}-{g.s(LOWER + DIGITS, 5)}" for _ in range(4)]
    out.append(Case("phrase", "GitHub recovery codes:\n" + "\n".join(codes), tuple(codes)))
    codes = [f"{g.s(DIGITS, 4)} {g.s(DIGITS, 4)}" for _ in range(3)]
    out.append(Case("phrase", "backup codes for the google account: " + ", ".join(codes), tuple(codes)))
    codes = [g.s(HEX, 10) for _ in range(3)]
    out.append(Case("phrase", "2FA recovery codes " + " ".join(codes), tuple(codes)))
    return out


def _entropy(g: _Gen) -> list[Case]:
    out = []
    for template in ("{v}", "the value was {v} last time", "set it to {v} and restart"):
        v = g.s(ALNUM, 40)
        out.append(Case("entropy", template.format(v=v), (v,)))
    return out


def secret_cases(seed: int = 7) -> list[Case]:
    g = _Gen(seed)
    return [*_provider(g), *_keyword(g), *_assignment(g), *_url(g), *_key_blocks(g), *_cli(g), *_prose(g),
            *_phrases(g), *_entropy(g)]


def _digest(g: _Gen, name: str) -> str:
    return hashlib.new(name, g.s(ALNUM, 12).encode()).hexdigest()


def benign_cases(seed: int = 11) -> list[Case]:
    g = _Gen(seed)
    b64 = lambda n: base64.b64encode(g.rng.randbytes(n)).decode()  # noqa: E731
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + g.rng.randbytes(60)).decode()
    ed = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00 " + g.rng.randbytes(32)).decode()
    rsa = base64.b64encode(b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01" + g.rng.randbytes(120)).decode()
    ulid = lambda: g.s("0123456789ABCDEFGHJKMNPQRSTVWXYZ"[:8], 1) + g.s(CROCKFORD, 25)  # noqa: E731
    texts = [
        f"md5 of the tarball: {_digest(g, 'md5')}", f"{_digest(g, 'md5')}  release.tar.gz",
        f"the file's checksum is {_digest(g, 'md5')}", f"sha1sum: {_digest(g, 'sha1')}",
        f"sha256sum gives {_digest(g, 'sha256')}", f"{_digest(g, 'sha256')}  quipu-1.2.0.whl",
        f"sha512: {_digest(g, 'sha512')}", f"the ETag was \"{_digest(g, 'md5')}\"",
        f"fixed in commit {_digest(g, 'sha1')}", f"git revert {_digest(g, 'sha1')[:12]}",
        f"HEAD is {_digest(g, 'sha1')} on main", f"cherry-pick {_digest(g, 'sha1')} onto the release branch",
        f"merge base {_digest(g, 'sha1')}", f"image digest sha256:{_digest(g, 'sha256')}",
        f"FROM python:3.12-slim@sha256:{_digest(g, 'sha256')}", f"blake2b hash {_digest(g, 'blake2b')}",
        f"\"integrity\": \"sha512-{b64(64)}\"", f"integrity=\"sha384-{b64(48)}\"", f"go.sum: golang.org/x/net v0.20.0 h1:{b64(32)}",
        f"nix hash sha256-{b64(32)}", f"subresource integrity sha256-{b64(32)}",
        f"request id {g.uuid()}", f"trace {g.uuid()} failed at the gateway", f"the tenant uuid is {g.uuid()}",
        f"UPDATE users SET flag = 1 WHERE id = '{g.uuid()}'", f"the heroku app id is {g.uuid()}",
        f"idempotency key {g.uuid()} was reused", f"correlation_id={g.uuid()}", f"ULID {ulid()}",
        f"order id {ulid()}", f"event {ulid()} was replayed", f"the job {ulid()} timed out",
        f"ssh-ed25519 {ed} dev@laptop", f"my public key: ssh-rsa {rsa} ops@bastion",
        f"authorized_keys has ssh-ed25519 {ed}", f"ecdsa-sha2-nistp256 {b64(104)} ci@runner",
        f"age public key age1{g.s('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}", f"wireguard PublicKey = {b64(32)}",
        "-----BEGIN CERTIFICATE-----\n" + "\n".join(b64(48) for _ in range(2)) + "\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\n" + b64(48) + "\n-----END PUBLIC KEY-----",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + b64(48) + "\n-----END PGP PUBLIC KEY BLOCK-----",
        f"<img src=\"data:image/png;base64,{png}\">", f"background: url(data:image/png;base64,{png})",
        f"data:image/gif;base64,{b64(60)}", f"data:font/woff2;base64,{b64(90)}",
        "the AWS docs use AKIAIOSFODNN7EXAMPLE as the key id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AKIAI44QH8DHBEXAMPLE in the IAM guide",
        "testnet address tb1q" + g.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38), "send to bc1q" + g.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
        "the faucet sent 0.1 ETH to 0x" + g.s(HEX, 40), "tx hash 0x" + g.s(HEX, 64),
        "ethereum contract 0x" + g.s(HEX, 40), "bitcoin address 1" + g.s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 33),
        "MUX_SECRET_KEY = process.env.MUX_SECRET_KEY", "const apiKey = process.env.OPENAI_API_KEY;",
        "api_key = os.environ[\"ANTHROPIC_API_KEY\"]", "token = os.getenv('GITHUB_TOKEN')", "password: ${DB_PASSWORD}",
        "DB_PASSWORD=${DB_PASSWORD}", "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}", "NPM_TOKEN: ${{ secrets.NPM_TOKEN }}",
        "api_key: <your-api-key>", "token = \"<your-token>\"", "export OPENAI_API_KEY=<your key here>",
        "password = \"YOUR_PASSWORD\"", "SECRET_KEY=changeme", "API_KEY=xxxxxxxxxxxxxxxxxxxx", "password: '********'",
        "set STRIPE_SECRET_KEY in .env", "the env var SENTRY_AUTH_TOKEN must be set in CI",
        "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY", "PGPASSWORD=$PGPASSWORD psql -h db -U app",
        "docker login -u bot -p \"$REGISTRY_TOKEN\" registry.internal", "echo \"$CR_PAT\" | docker login ghcr.io -u bot --password-stdin",
        "curl -u \"$JENKINS_USER:$JENKINS_TOKEN\" https://jenkins.internal", "redis-cli -h cache -p 6379 ping",
        "ssh -p 2222 deploy@web1", "docker run -p 8080:80 nginx", "mysql -u root -p orders", "sshpass -p \"$SSH_PASS\" ssh host",
        "openssl pkcs12 -in c.p12 -passin env:P12_PASS -out c.pem", "openssl rsa -in k.pem -passin file:pw.txt",
        "ldapsearch -x -D cn=admin,dc=corp -W -b dc=corp", "secret_key = get_secret(\"django\")",
        "password = getpass.getpass()", "token = read_token(path)", "self.password = password",
        "if password == confirm_password:", "def check_password(self, raw_password):", "password_hash = bcrypt.hash(password)",
        "The password is in 1Password under 'prod db'.", "Reset the password through the admin panel.",
        "Passwords must be at least 12 characters long.", "The password field is required.",
        "パスワードは1Passwordに保存してあります", "密码保存在公司的保险库里", "비밀번호는 금고에 있습니다",
        "heslo je v trezoru", "salasana on tallennettu holviin", "passordet ligger i 1Password",
        "das Passwort steht im Tresor", "le mot de passe est dans le coffre", "la contraseña está en el gestor",
        "Enable TOTP for every admin account.", "Recovery codes are stored in the team vault.",
        "Store the 2FA backup codes offline.", "the passphrase is stored in the keychain",
        "use a diceware passphrase of five words", "rotate the api key every 90 days",
        "the token expires after one hour", "set the secret via `gh secret set NPM_TOKEN`",
        f"pod api-7d9f8b6c5-{g.s(LOWER + DIGITS, 5)} restarted", "arn:aws:iam::123456789012:role/deploy",
        "aws account 123456789012 in eu-west-1", "s3://acme-prod-assets/builds/2024-06-01/app.tar.gz",
        "https://example.com/callback?code=state&redirect_uri=%2Fhome", "https://github.com/acme/api/pull/1234",
        "feature/add-user-profile-page-with-avatar-upload", "fix-flaky-integration-test-on-windows-runner",
        "the branch is release-candidate-two-for-march", "npm i react-native-safe-area-context",
        "getUserProfileByExternalIdentifierAsync()", "node_modules/.cache/babel-loader/index.json",
        "src/components/UserProfile/AvatarUploader.tsx", "com.example.payments.internal.ReconciliationJob",
        f"base64 of hello world is {base64.b64encode(b'hello world').decode()}",
        f"the header decodes from {base64.b64encode(b'Content-Type: application/json; charset=utf-8').decode()}",
        f"echo {base64.b64encode(b'This is a test message for the docs').decode()} | base64 -d",
        "IPv6 2001:0db8:85a3:0000:0000:8a2e:0370:7334", "MAC 00:1A:2B:3C:4D:5E", "color #1a2b3c and #ffcc00",
        "version 1.24.3-rc.2+build.5678", "ISBN 978-3-16-148410-0", "timestamp 2024-06-01T12:34:56.789Z",
        "Google Analytics G-" + g.s(UPPER + DIGITS, 10), "sentry release 2024.06.01-" + g.s(HEX, 7),
        f"The build id is {g.s(DIGITS, 10)}", f"nanoid-style record id V1St{g.s(DIGITS, 2)}", "the port is 5432",
        "password reset tokens expire after 15 minutes", "a key rotation happens every night at 02:00",
        "the secret sauce is the cache warm-up", "the token bucket refills 10 tokens per second",
        "use the `--password-stdin` flag instead of -p", "kubectl create secret generic db --from-env-file=.env",
        f"the wasm module hash {_digest(g, 'sha256')}", f"cache key {_digest(g, 'sha1')}",
        f"fingerprint SHA256:{b64(32).rstrip('=')}", f"the GPG key id is {g.s(HEX.upper(), 16)}",
        f"key fingerprint {' '.join(g.s(HEX.upper(), 4) for _ in range(10))}",
        "Stripe publishable key starts with pk_test_ and is safe in the browser",
        "the x-request-id header carries a uuid", "client id 1234567890-abc.apps.googleusercontent.com",
        "example: sk-... (never paste the real key)", "keys look like ghp_xxxxxxxxxxxxxxxxxxxx",
        "password=<redacted>", "the password is hidden as [REDACTED]", "user:password@host is the URL form",
        "postgres://user:password@localhost:5432/db", "mysql://root:root@localhost/test",
        "redis://localhost:6379/0", "amqp://guest:guest@localhost:5672/", "https://user@bitbucket.org/acme/repo.git",
        f"commit {_digest(g, 'sha1')}\nAuthor: Dev <dev@example.com>", f"tree {_digest(g, 'sha1')}",
        f"the lockfile pins {_digest(g, 'sha256')[:16]}", f"hex dump {g.s(HEX, 48)}",
        f"uuid list: {g.uuid()}, {g.uuid()}, {g.uuid()}", f"snowflake id {g.s(DIGITS, 19)}",
        f"run id {g.s(DIGITS, 11)} on the actions tab", "the heroku dyno web.1 crashed with R14",
        "github actions cache hit for key node-modules-linux-x64", "the OTP is sent by SMS",
        "TOTP uses a base32 seed shared once", "an API key is a string the server checks",
        "passphrase-protected keys need ssh-agent", "the test password is in tests/fixtures/users.json",
        f"document id {g.s(LOWER + DIGITS, 20)} in Firestore", f"mongo ObjectId('{g.s(HEX, 24)}')",
        f"the slug is how-we-cut-p99-latency-by-{g.rng.randint(10, 90)}-percent",
        f"Cloudflare ray id {g.s(HEX, 16)}-AMS", "gitleaks:allow is gitleaks' inline marker",
        f"see github.com/acme/api/commit/{_digest(g, 'sha1')}", "github actions cache hit for key node-modules-linux-x64",
        f"the github workflow run {g.s(DIGITS, 11)} failed", f"slack channel C{g.s(UPPER + DIGITS, 10)}",
        "passwordless login via passkeys", "the passwd file lives in /etc", "Passwortänderung erfolgt monatlich",
        "the passphrase is stored in the keychain", "a passphrase must have five random words",
        "Passwords are hashed with argon2id (64 MiB, 3 iterations)", f"the gitlab pipeline {g.s(DIGITS, 9)} passed",
        f"heroku releases: v{g.rng.randint(100, 999)} deployed", "the mysql port is -P3306 in the docs",
        "token_type: Bearer", "docker run -e POSTGRES_PASSWORD=postgres postgres:16", "password: !vault |",
        "apiKey: import.meta.env.VITE_API_KEY", "const token = await getToken();",
        "tokens: 128000 context window for claude-3-5-sonnet-20241022", "password_hash: bcrypt with cost 12",
        "docker login -u AWS -p $(aws ecr get-login-password) 123456789012.dkr.ecr.eu-west-1.amazonaws.com",
        "redis-cli -a \"$(cat /run/secrets/redis)\" ping", "Default credentials for the local stack: admin / admin",
        "パスワードは管理者に聞いてください", "Salasanan saat ylläpidolta.", "amqp://guest:guest@localhost:5672/",
        "chown root:www-data /var/www", "image python:3.12-slim", "the admin/ folder holds the dashboards", "-p, --password <password>   the password to use",
    ]
    return [Case("benign", t, ()) for t in texts]
