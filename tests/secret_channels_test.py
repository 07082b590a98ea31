"""One scanner for every channel: forms of each rule family are refused (or, in the archive,
redacted) in every field, through the real CLI, the real MCP server, capture and the history.

The forms come from ``testing/secret_corpus.py`` (made at run time, so the repository holds no
token); bench/bench_secrets.py measures the same corpus in full.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quipu.capture import gates
from quipu.curate import review
from quipu.errors import SecretRefused
from quipu.skills import gate as skills_gate
from quipu.store import secrets_scan
from quipu.store.store import Store
from testing.fixtures import git, make_store, mcp_calls, memory, quipu
from testing.secret_corpus import Case, benign_cases, secret_cases
from testing.transcripts import Transcript

SECRETS = secret_cases()
BENIGN = benign_cases()
FAMILIES = sorted({c.family for c in SECRETS})
CLI_FIELDS = ("body", "--title", "--description", "--topic", "--alias", "--entity")
LANGUAGE_WORDS = ("Passwort", "mot de passe", "contraseña", "senha", "wachtwoord", "пароль", "şifresi", "heslo",
                  "salasana", "passordet", "パスワード", "密码", "비밀번호", "hasło", "lösenordet")


def sample(per_family: int, offset: int = 0) -> list[Case]:
    """``per_family`` forms of each family, spread over the family (a different spread per offset)."""
    out = []
    for family in FAMILIES:
        cases = [c for c in SECRETS if c.family == family]
        step = max(1, len(cases) // per_family)
        out += [cases[(offset + i * step) % len(cases)] for i in range(per_family)]
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


def everything_in(store_root: Path) -> bytes:
    objects = subprocess.run(["git", "-C", str(store_root), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    log = subprocess.run(["git", "-C", str(store_root), "log", "-p", "--all", "--format=%B"],
                         capture_output=True, check=True).stdout
    return objects + log


def leaked(data: bytes, cases: list[Case]) -> list[str]:
    return [v for c in cases for v in c.values if v.encode() in data]


def test_the_corpus_covers_the_rule_families_and_languages() -> None:
    assert len(SECRETS) >= 200 and len(BENIGN) >= 150
    assert {"provider", "keyword", "assignment", "url", "key-block", "cli", "prose", "phrase"} <= set(FAMILIES)
    assert all(any(word in c.text for c in SECRETS) for word in LANGUAGE_WORDS)
    assert secret_cases() == SECRETS and secret_cases(8) != SECRETS  # seeded: the same corpus each run


def test_the_scanner_refuses_and_redacts_the_secret_forms_and_admits_the_look_alikes() -> None:
    missed = [c.text for c in SECRETS if not secrets_scan.has_secret(c.text)]
    kept = [c.text for c in SECRETS if any(v in secrets_scan.redact(c.text) for v in c.values)]
    refused = [c.text for c in BENIGN if secrets_scan.has_secret(c.text)]
    assert len(missed) <= 0.02 * len(SECRETS), missed
    assert len(kept) <= 0.02 * len(SECRETS), kept
    assert len(refused) <= 0.03 * len(BENIGN), refused


def test_redacted_text_holds_nothing_the_scanner_would_flag_again() -> None:
    """What the archive and the review queue keep is a fixpoint: rescanning it, or its JSON, finds nothing."""
    for c in SECRETS:
        redacted = secrets_scan.redact(c.text)
        assert secrets_scan.find_secrets(redacted) == [], (c.text, redacted)
        assert secrets_scan.find_secrets(json.dumps({"reason": f"because {redacted}", "n": 1})) == [], redacted


def test_the_pre_filter_never_skips_a_text_the_rules_would_flag() -> None:
    for c in [*SECRETS, *BENIGN]:
        for framed in (c.text, f"see {c.text} here", flat(c.text)):
            if secrets_scan.find_secrets(framed):
                assert secrets_scan.may_hold_secret(framed), framed
    assert not secrets_scan.may_hold_secret("We moved the standup to Thursdays after the offsite.")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*secrets_scan._KEYWORDS, *(k[1:] for k in secrets_scan._KEYWORDS if len(k) > 2),
                                 " ", "\n", "A", "ß", "x" * 16, "İ"]), max_size=12))
def test_the_pre_filter_finds_exactly_the_texts_holding_a_keyword_or_a_long_run(parts: list[str]) -> None:
    """The one-pass keyword search answers as testing each keyword in turn would (overlapping,
    nested and non-ASCII keywords included)."""
    text = "".join(parts)
    low = text.lower()
    plain = any(k in low for k in secrets_scan._KEYWORDS) or any(len(w) >= 15 for w in low.split())
    assert secrets_scan.may_hold_secret(text) == plain, text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([*(c.text for c in SECRETS[::9]), *(c.text for c in BENIGN[::9]), " ", "\n",
                                          "\x1f", "x" * 14, "[REDACTED:password-prose]", "pass", "İ", "\xa0", "\u3000",
                                          "é" * 7, "日本語"]), max_size=4)
                .map("".join), max_size=8))
def test_many_texts_scanned_at_once_find_what_each_alone_finds(texts: list[str]) -> None:
    assert secrets_scan.find_secrets_many(texts) == [secrets_scan.find_secrets(t) for t in texts]


def test_a_phrase_rule_keys_on_its_rare_word_and_still_finds_the_phrase() -> None:
    """Prose sharing only a short word with a phrase ("new" of "new relic", "mot" of "mot de
    passe") runs no rule; the phrases themselves still do."""
    assert not secrets_scan.may_hold_secret("Something new: my mother sent a photo of her garden at dawn.")
    assert secrets_scan.has_secret("mot de passe du wifi : Zq8#vLm2!Rt")
    assert secrets_scan.has_secret("New Relic key 6f1d2c3b4a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a")


@pytest.mark.parametrize("field", CLI_FIELDS)
def test_quipu_add_refuses_every_family_in_every_field_and_names_rule_and_place(tmp_path: Path, field: str) -> None:
    store = make_store(tmp_path / "store")
    forms = sample(1, offset=CLI_FIELDS.index(field))
    for n, case in enumerate(forms):
        text = case.text if field == "body" else flat(case.text)[:80 if field in ("--topic", "--alias", "--entity") else 200]
        args = ["--store", str(store.root), "add", "--id", f"note-{n}"]
        if field == "body":
            args += [text, "--title", "Deploy note"]
        elif field == "--title":
            args += ["Deploy note body.", "--title", text]
        else:
            args += ["Deploy note body.", "--title", "Deploy note", field, text]
        done = quipu(*args)
        assert done.returncode == 1, (case.text, done.stdout, done.stderr)
        first = done.stderr.splitlines()[0]
        assert "refusing to commit" in first and "looks like it holds a secret" in first, done.stderr
        assert "--allow-secret-like" in done.stderr
        assert not any(v in done.stderr + done.stdout for v in case.values if len(v) >= 6)
    assert leaked(everything_in(store.root), forms) == []


def test_a_field_too_long_to_be_valid_is_named_without_its_secret(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    value = "hf_" + "".join(("aBcDeFgHiJ", "kLmNoPqRsT", "uVwXyZaBcD", "eFgH"))
    done = quipu("--store", str(store.root), "add", "Body.", "--title", "Note", "--topic", f"{value} " * 4)
    assert done.returncode == 1 and "field 'topics'" in done.stderr and value not in done.stderr


def test_a_person_vouches_for_a_look_alike_with_the_rule_name_or_the_inline_marker(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    at = ["--store", str(store.root)]
    text = "The build cache id is " + "".join(("Zq8", "vK2", "mXr9Lp", "T4wZs8Nb", "Y3cHd6")) + " on the CI box."
    refused = quipu(*at, "add", text, "--title", "Build cache id")
    assert refused.returncode == 1 and "high-entropy at line 1" in refused.stderr

    allowed = quipu(*at, "add", text, "--title", "Build cache id", "--allow-secret-like", "high-entropy", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert "Quipu-Allowed-Secret-Like: high-entropy" in git(store.root, "log", "-1", "--format=%B")

    wrong_rule = quipu(*at, "add", text, "--title", "Build cache id 2", "--allow-secret-like", "password-prose")
    assert wrong_rule.returncode == 1  # vouching for one rule allows that rule only

    marked = quipu(*at, "add", text + " <!-- quipu:allow-secret -->", "--title", "Build cache id 3")
    assert marked.returncode == 0, marked.stderr
    assert "Quipu-Allowed-Secret-Like: quipu:allow-secret" in git(store.root, "log", "-1", "--format=%B")
    real = "the db password is " + "".join(("Tr0ub", "4dor-", "Zx9!"))
    other_line = quipu(*at, "add", f"{real}\nnot this one: quipu:allow-secret", "--title", "Two lines")
    assert other_line.returncode == 1  # the marker covers its own line only


def test_quipu_import_takes_the_vouched_rule_and_records_it(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    folder = tmp_path / "notes"
    folder.mkdir()
    build = "".join(("Zq8", "vK2", "mXr9Lp", "T4wZs8Nb", "Y3cHd6"))
    (folder / "cache.md").write_text(f"# Build cache\n\nThe build cache id is {build} on the CI box.\n", encoding="utf-8")
    at = ["--store", str(store.root), "import", "markdown", str(folder)]
    refused = quipu(*at)
    assert "high-entropy" in refused.stdout + refused.stderr and build not in refused.stdout + refused.stderr
    done = quipu(*at, "--allow-secret-like", "high-entropy")
    assert done.returncode == 0, done.stderr
    assert "Quipu-Allowed-Secret-Like: high-entropy" in git(store.root, "log", "-1", "--format=%B")


def test_quipu_import_markdown_refuses_every_family_in_every_field(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    forms = sample(2)
    for n, case in enumerate(forms):
        folder = tmp_path / f"notes-{n}"
        folder.mkdir()
        where = n % 4
        title = flat(case.text)[:150].replace('"', "'") if where == 0 else "Deploy note"
        topics = json.dumps([flat(case.text)[:80]]) if where == 1 else "[deploy]"
        aliases = json.dumps([flat(case.text)[:80]]) if where == 2 else "[]"
        body = case.text if where == 3 else "Deploys go through CI."
        (folder / "note.md").write_text(f'---\ntitle: "{title}"\ntopics: {topics}\naliases: {aliases}\n---\n{body}\n',
                                        encoding="utf-8")
        (folder / "plain.md").write_text("# Plain\n\nNothing secret here.\n", encoding="utf-8")
        done = quipu("--store", str(store.root), "import", "markdown", str(folder))
        assert "looks like it holds a secret" in done.stdout + done.stderr, (case.text, done.stdout, done.stderr)
        assert not any(v in done.stderr + done.stdout for v in case.values if len(v) >= 6)
    assert leaked(everything_in(store.root), forms) == []


def test_mcp_remember_refuses_every_family_in_every_field(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    forms = sample(2, offset=1)
    fields = ("title", "body", "topics")
    calls = []
    for n, case in enumerate(forms):
        arguments: dict[str, Any] = {"title": f"Deploy note {n}", "body": "Deploys go through CI.", "class": "reference"}
        field = fields[n % len(fields)]
        arguments[field] = [flat(case.text)[:80]] if field == "topics" else (
            flat(case.text)[:120] if field == "title" else case.text)
        calls.append(arguments)
    answers = mcp_calls(store.root, tmp_path, [("remember", arguments) for arguments in calls])
    for case, (error, text) in zip(forms, answers, strict=True):
        assert error and "refused by the secret gate" in text, (case.text, text)
        assert not any(v in text for v in case.values if len(v) >= 6)
    assert leaked(everything_in(store.root), forms) == []


CAPTURE_FIELDS = ("title", "description", "statement", "topics", "entities", "aliases", "value", "profile")


def _candidate(n: int, text: str, field: str) -> dict[str, object]:
    item: dict[str, object] = {
        "class": "fact" if field == "value" else "reference", "title": f"Billing service note {n}",
        "statement": f"The billing service note number {n} is about deploys.", "outcome": "held", "kind": "durable",
        "said_by": "assistant", "quote": "", "topics": ["billing"], "entities": ["billing-api"],
        "aliases": [f"billing note {n}"], "subject": "billing-api" if field == "value" else "",
        "value": "deploys through CI" if field == "value" else "", "scope": "project",
        "profile_prefix": "", "stable_for_months": 0, "description": "",
    }
    if field in ("topics", "entities", "aliases"):
        item[field] = [*item[field], flat(text)[:80]]  # type: ignore[misc]
    elif field == "profile":
        item.update(scope="user", profile_prefix="Environment", stable_for_months=12, statement=f"The user keeps {flat(text)}")
    elif field == "statement":
        item["statement"] = f"Deploy note: {text}"
    else:
        item[field] = flat(text)[:120] if field == "title" else flat(text)
    return item


def test_quipu_capture_refuses_every_family_in_every_field(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    forms = sample(2, offset=2)  # a model proposes 20 candidates at most
    candidates = [_candidate(n, c.text, CAPTURE_FIELDS[n % len(CAPTURE_FIELDS)]) for n, c in enumerate(forms)]
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"candidates": candidates}), encoding="utf-8")
    script = tmp_path / "model.py"
    script.write_text(f"import json, sys\njson.load(sys.stdin)\nprint(open({str(answer)!r}).read())\n", encoding="utf-8")
    session = tmp_path / "session.jsonl"
    session.write_text('{"type": "user", "message": {"role": "user", "content": "notes on billing deploys"}}\n')

    done = quipu("--store", str(store.root), "capture", "--transcript", str(session), "--session", "s1",
                 "--model", f"command:{sys.executable} {script}", "--json")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["refused_by_gate"].get("secret") == len(forms), report
    assert leaked(everything_in(store.root) + done.stdout.encode(), forms) == []


def test_the_session_end_hook_path_and_the_review_queue_and_commit_messages_keep_no_secret(tmp_path: Path) -> None:
    from quipu.capture.capture import capture_session
    from quipu.model import ScriptedModel

    store = make_store(tmp_path / "store")
    store.add(memory("billing-a", "Billing deploys go through CI", "The billing API deploys through CI."))
    forms = sample(2, offset=3)
    session = tmp_path / "session.jsonl"
    session.write_text('{"type": "user", "message": {"role": "user", "content": "notes on billing deploys"}}\n')
    model = ScriptedModel([{"candidates": [_candidate(n, c.text, CAPTURE_FIELDS[(n + 3) % len(CAPTURE_FIELDS)])]}
                           for n, c in enumerate(forms)])
    for n, case in enumerate(forms):
        report = capture_session(store, session, f"s{n}", model)
        assert [gate for gate, _ in report.refused] == ["secret"], case.text
        store.add_event("billing-a", {"action": "review", "reason": f"conflicts because {case.text}"},
                        summary=f"quipu: review billing-a ({flat(case.text)})", trailers={"Quipu-Action": "review"})
        with pytest.raises(SecretRefused):
            store.commit({"README.md": b"ok\n"}, "quipu: note", {"Quipu-Action": "note", "Quipu-Why": flat(case.text)})
        for where in ("name", "description", "failure", "body"):  # a drafted skill, in each of its fields
            fields = {"name": "deploy-billing", "description": "Deploy billing.", "failure": "", "body": "Run it."}
            fields[where] = flat(case.text) if where != "body" else case.text
            assert "secret" in (skills_gate.check_safety(skills_gate.Draft(**fields)) or ""), (where, case.text)
    data = everything_in(store.root) + repr([i.to_json() for i in review.items(store, include_closed=True)]).encode()
    assert leaked(data, forms) == []


def test_the_history_archive_keeps_each_turn_with_its_secret_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    forms = sample(3, offset=4)
    t = Transcript("5e5e5e5e-0000-4000-8000-000000000001", "/home/dev/shop")
    for case in forms:
        t.user(f"Remember this for later: {case.text}")
        t.assistant("Noted.")
    t.write(claude / "projects")

    done = quipu("history", "index", "--json")

    assert done.returncode == 0, done.stderr
    home = Path(os.environ["QUIPU_HOME"]) / "history"
    data = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and p.name != "pieces.sqlite")
    assert leaked(data, forms) == []
    turns = b"".join(p.read_bytes() for p in (home / "shelves").rglob("*.jsonl"))
    assert turns.count(b"Remember this for later") == len(forms)  # the turns are kept, redacted, not refused
    assert turns.count(b"[REDACTED:") >= len(forms)


def test_benign_look_alikes_are_committed_by_add(tmp_path: Path) -> None:
    store: Store = make_store(tmp_path / "store")
    refused = []
    for n, case in enumerate(BENIGN):
        try:
            store.add(memory(f"benign-{n}", f"Developer note {n}", case.text, topics=[flat(case.text)[:80]]))
        except SecretRefused:
            refused.append(case.text)
        c = gates.Candidate.create(_candidate(n, case.text, "statement"))
        if gates.gate_secret(c) is not None:
            refused.append(case.text)
    assert len(refused) <= 0.03 * len(BENIGN), refused


def test_the_inline_marker_vouches_only_for_what_a_person_commits_themselves(tmp_path: Path) -> None:
    """Someone else's text (a transcript, a model's words, an MCP caller) may carry the marker too:
    capture's gate and the archive's redaction never honour it; `quipu add` does."""
    import random
    import string

    rng = random.Random(5)
    token = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    line = f"the deploy token is {token}  # {secrets_scan.ALLOW_MARKER}"
    assert secrets_scan.find_secrets(line) and token not in secrets_scan.redact(line)
    assert secrets_scan.find_secrets(line, marker=True) == []
    store = make_store(tmp_path / "store")
    done = quipu("--store", str(store.root), "add", line, "--title", "Deploy token")
    assert done.returncode == 0, done.stderr
    assert "Quipu-Allowed-Secret-Like: quipu:allow-secret" in subprocess.run(
        ["git", "-C", str(store.root), "log", "-1", "--format=%B"], capture_output=True, text=True).stdout
