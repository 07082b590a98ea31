"""No secret reaches a store or its history, in any field; look-alike developer notes still get in.

The corpus (tests/fixtures/secrets) holds 60+ secret forms and 60+ benign notes that look like
them. A model that (wrongly) returns each secret in a different field of a capture candidate
(title, description, body, topics, entities, aliases, a fact's value, a profile line), a
decision's reason bound for the review queue, and a person's `quipu add` all meet the same
check. Regression tests for docs/security.md.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from quipu.capture import capture
from quipu.capture import gates
from quipu.index import index
from quipu.curate import review
from quipu.store import secrets_scan
from quipu.errors import SecretRefused
from quipu.model import ScriptedModel
from quipu.store.store import Store
from testing.fixtures import make_store, memory

CORPUS = Path(__file__).parent / "fixtures" / "secrets"
FIELDS = ("title", "description", "statement", "topics", "entities", "aliases", "value", "profile")


def entries(name: str) -> list[str]:
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [line.replace("\\n", "\n") for line in lines if line and not line.startswith("#")]


def secrets() -> list[tuple[str, list[str]]]:
    """(text, the secret values in it) for each secret form."""
    return [(e.replace("[[", "").replace("]]", ""), re.findall(r"\[\[(.*?)\]\]", e, re.S)) for e in entries("secret_forms.txt")]


def history(store: Store) -> bytes:
    root = str(store.root)
    objects = subprocess.run(["git", "-C", root, "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    log = subprocess.run(["git", "-C", root, "log", "-p", "--all", "--format=%B"], capture_output=True, check=True).stdout
    return objects + log


def candidate(n: int, text: str, field: str) -> dict[str, object]:
    """A durable, held, declarative candidate with ``text`` in ``field``."""
    title = f"Billing service note {n}"
    item: dict[str, object] = {
        "class": "fact" if field == "value" else "reference", "title": title,
        "statement": f"The billing service note number {n} is about deploys.", "outcome": "held", "kind": "durable",
        "said_by": "assistant", "quote": "", "topics": ["billing"], "entities": ["billing-api"],
        "aliases": [f"billing note {n}"], "subject": "billing-api" if field == "value" else "",
        "value": "deploys through CI" if field == "value" else "", "scope": "project",
        "profile_prefix": "", "stable_for_months": 0, "description": "",
    }
    flat = " ".join(text.split())
    if field in ("topics", "entities", "aliases"):
        item[field] = [*item[field], flat[:80]]  # type: ignore[misc]
    elif field == "profile":
        item.update(scope="user", profile_prefix="Environment", stable_for_months=12,
                    statement=f"The user keeps this: {flat}")
    elif field == "title":
        item["title"] = flat[:120]
    elif field == "statement":
        item["statement"] = f"Deploy note: {text}"
    else:
        item[field] = flat
    return item


def session(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text('{"type": "user", "message": {"role": "user", "content": "notes on billing deploys"}}\n')
    return path


def test_the_corpus_is_big_enough() -> None:
    assert len(secrets()) >= 60 and len(entries("benign_notes.txt")) >= 60
    languages = ["Passwort", "mot de passe", "contraseña", "senha", "wachtwoord", "пароль", "şifresi"]
    assert all(any(word in text for text, _ in secrets()) for word in languages)


def test_no_secret_of_the_corpus_reaches_the_store_its_history_or_the_review_queue(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    store.add(memory("billing-a", "Billing deploys go through CI", "The billing API deploys through CI."))
    store.add(memory("billing-b", "Billing deploys need a review", "Billing deploys need a second reviewer."))
    forms = secrets()
    answers = [{"candidates": [candidate(n, text, FIELDS[n % len(FIELDS)])]} for n, (text, _) in enumerate(forms)]
    model = ScriptedModel(answers)
    refused = 0
    for n in range(len(forms)):
        report = capture.capture_session(store, session(tmp_path), f"s{n}", model)
        refused += sum(gate == "secret" for gate, _ in report.refused)
        assert report.error is None, report.error
    for n, (text, _) in enumerate(forms):  # a model's reason on a review-queue item
        store.add_event("billing-a", {"action": "review", "review_id": f"rv-{n}", "kind": "tension",
                                      "other": "billing-b", "reason": f"conflicts because {text}"},
                        summary=f"quipu: queue billing-a for review ({text})", trailers={"Quipu-Action": "review"})
        with pytest.raises(SecretRefused):  # a person's own `quipu add`
            store.add(memory(f"manual-{n}", "Billing deploy note", f"Remember: {text}"))
    assert refused == len(forms)

    everything = history(store) + index.rows(store, "SELECT group_concat(body, ' ') AS b FROM memories")[0]["b"].encode()
    everything += repr([item.to_json() for item in review.items(store, include_closed=True)]).encode()
    everything += capture.log_path(store).read_bytes()
    leaked = [value for _, values in forms for value in values if value.encode() in everything]
    assert leaked == []


def test_benign_look_alike_notes_are_admitted(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    notes = entries("benign_notes.txt")
    admitted = 0
    for n, text in enumerate(notes):
        c = gates.Candidate.create(candidate(n, text, "statement"))
        try:
            store.add(memory(f"benign-{n}", f"Developer note {n}", text))
        except SecretRefused:
            continue
        admitted += gates.gate_secret(c) is None
    assert admitted / len(notes) >= 0.95, [t for t in notes if secrets_scan.has_secret(t)]


def test_a_refused_candidate_is_counted_and_logged_without_its_secret(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    text, values = next(item for item in secrets() if "hunter2-Zebra!" in item[0])
    report = capture.capture_session(store, session(tmp_path), "s1", ScriptedModel([{"candidates": [candidate(1, text, "title")]}]))
    assert [gate for gate, _ in report.refused] == ["secret"]
    log = capture.log_path(store).read_text(encoding="utf-8")
    assert '"gate": "secret"' in log and values[0] not in log and "[REDACTED" in log
