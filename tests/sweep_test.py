"""`quipu sweep`, the hook entry points and the detached per-session work, end to end.

Everything runs as a real `python -m quipu` subprocess against a real store; the model is the
fake command in tests/fixtures/curate/fake_model.py (quipu's `command:` backend).
"""
from __future__ import annotations

import collections
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from quipu.index import index
from quipu.store.store import Store
from testing.fixtures import add_all, git, make_store, memory, quipu, run_prompt_hook

FIXTURES = Path(__file__).parent / "fixtures" / "curate"
ARTICLE = json.loads((FIXTURES / "article_cases.json").read_text())
FAKE_MODEL = f"command:{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURES / 'fake_model.py'))}"
DECISIONS = {tuple(sorted(c["pair"])) for c in ARTICLE["cases"]}


def build(path: Path, ids: tuple[str, ...] | None = None, **extra: dict[str, Any]) -> Store:
    store = make_store(path)
    add_all(store, [memory(m["id"], m["title"], m["body"], cls=m["class"], topics=m["topics"],
                           entities=m["entities"], created=m["created"], **extra.get(m["id"], {}))
                    for m in ARTICLE["memories"] if ids is None or m["id"] in ids])
    return store


def model_env(tmp_path: Path, store: Store, **more: str) -> dict[str, str]:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"|".join(sorted(c["pair"])): c["answer"] for c in ARTICLE["cases"]}))
    return {"QUIPU_STORE": str(store.root), "FAKE_MODEL_ANSWERS": str(answers),
            "FAKE_MODEL_SEEN": str(tmp_path / "model-seen.jsonl"), **more}


def sweep(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return quipu("sweep", "--model", FAKE_MODEL, *args, env=env)


def tree(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD^{tree}").strip()


def decided_pairs(store: Store) -> list[tuple[str, ...]]:
    """The pair each sweep decision commit is about (a supersession or a queued review)."""
    out = []
    for entry in store.log():
        t = entry.trailers
        if "Quipu-Sweep" in t and entry.action in ("supersede", "review"):
            out.append(tuple(sorted((t.get("Quipu-Supersedes") or t["Quipu-Memory"],
                                     t.get("Quipu-Superseded-By") or t["Quipu-Other"]))))
    return out


def wait_for(check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


# ------------------------------------------------------------------ quipu sweep


def test_sweep_cli_applies_queues_and_undo_restores_the_tree_byte_for_byte(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    env = model_env(tmp_path, store)
    before = tree(store)
    done = sweep(env, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["sweep"].startswith("sw-") and report["pairs"]["applied"] == 1 and report["pairs"]["queued"] == 4
    assert sorted(decided_pairs(store)) == sorted(DECISIONS)
    shown = git(store.root, "show", "--format=%B", "-s", report["applied"][0]["commit"])
    for trailer in ("Quipu-Sweep: " + report["sweep"], "Quipu-Verdict: supersedes", "Quipu-Confidence: 0.92",
                    "Quipu-Guards: confidence,overlap,class,scope"):
        assert trailer in shown
    undone = quipu("undo", "--sweep", report["sweep"], env=env)
    assert undone.returncode == 0, undone.stderr
    assert tree(store) == before
    assert git(store.root, "status", "--porcelain") == ""


def test_undo_of_one_decision_leaves_the_rest_of_the_sweep(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    env = model_env(tmp_path, store)
    report = json.loads(sweep(env, "--json").stdout)
    assert quipu("undo", report["applied"][0]["commit"], env=env).returncode == 0
    index.ensure_fresh(store)
    statuses = dict((r["id"], r["status"]) for r in index.rows(store, "SELECT id, status FROM memories"))
    assert statuses["vpn-old"] == "active"
    assert len(json.loads(quipu("review", "--json", env=env).stdout)) == 4  # the queued tensions stay


def test_budget_stops_the_pass_and_the_next_sweep_continues(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    env = model_env(tmp_path, store)
    first = json.loads(sweep(env, "--json", "--max-calls", "2").stdout)
    assert first["usage"]["calls"] == 2 and first["pairs"]["sent"] == 2
    assert first["pairs"]["deferred"] == first["pairs"]["candidates"] - 2 > 0
    assert first["budget"] == {"max_calls": 2, "max_chars": 400000}
    assert "budget" in first["stopped"]
    calls = [json.loads(x) for x in (store.cache_dir / "model-calls.jsonl").read_text().splitlines()]
    assert [c["ok"] for c in calls] == [True, True, False] and calls[-1]["refused"]
    rest = json.loads(sweep(env, "--json", "--max-calls", "0", "--max-chars", "0").stdout)
    assert rest["pairs"]["candidates"] == first["pairs"]["deferred"]
    assert rest["pairs"]["deferred"] == 0 and rest["stopped"] is None
    assert sorted(decided_pairs(store)) == sorted(DECISIONS)


def test_max_chars_is_never_passed(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    env = model_env(tmp_path, store)
    report = json.loads(sweep(env, "--json", "--max-chars", "5000").stdout)
    assert 0 < report["usage"]["chars_sent"] <= 5000
    assert report["pairs"]["deferred"] > 0


def test_sweep_settings_in_the_users_config_apply_and_flags_win(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    env = model_env(tmp_path, store)
    home = Path(os.environ["QUIPU_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    with (home / "config.toml").open("a") as fh:
        fh.write(f'\n[sweep]\nmodel = "{FAKE_MODEL.replace(chr(92), chr(92) * 2)}"\nmax_calls = 1\n')
    from_config = json.loads(quipu("sweep", "--json", env=env).stdout)
    assert from_config["model"] == "command:python" or from_config["model"].startswith("command:")
    assert from_config["usage"]["calls"] == 1 and from_config["budget"]["max_calls"] == 1
    assert json.loads(quipu("sweep", "--json", "--max-calls", "3", env=env).stdout)["usage"]["calls"] == 3


def test_text_report_names_the_sweep_and_how_to_undo_it(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    done = sweep(model_env(tmp_path, store))
    assert done.returncode == 0, done.stderr
    assert "1 applied, 4 queued for review" in done.stdout
    assert "applied: vpn-old superseded by vpn-new" in done.stdout
    assert "quipu undo --sweep sw-" in done.stdout


def test_dry_run_asks_no_model_and_changes_nothing(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    env = model_env(tmp_path, store)
    head = git(store.root, "rev-parse", "HEAD")
    report = json.loads(quipu("sweep", "--dry-run", "--json", env=env).stdout)
    assert report["dry_run"] and report["pairs"]["sent"] == 0
    assert {tuple(sorted((p["a"], p["b"]))) for p in report["would_send"]} >= DECISIONS
    assert git(store.root, "rev-parse", "HEAD") == head
    assert not (tmp_path / "model-seen.jsonl").exists()


def test_sweep_without_claude_says_how_to_fix_it(tmp_path: Path) -> None:
    store = build(tmp_path / "store", ("vpn-old", "vpn-new"))
    done = quipu("sweep", env={"QUIPU_STORE": str(store.root), "PATH": str(tmp_path / "empty-bin")})
    assert done.returncode == 1
    assert "not on PATH" in done.stderr and "install Claude Code" in done.stderr
    assert "1 left for the next sweep" in done.stdout


def test_sweep_killed_midway_leaves_a_consistent_store_and_the_next_completes(tmp_path: Path) -> None:
    store = build(tmp_path / "store")
    env = {**os.environ, **model_env(tmp_path, store, FAKE_MODEL_SLEEP="0.3")}
    proc = subprocess.Popen([sys.executable, "-m", "quipu", "sweep", "--model", FAKE_MODEL, "--json"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(decided_pairs(store)) >= 2)
        busy = sweep(env)  # two sweeps never run at once
        assert busy.returncode == 1 and "another sweep is running" in busy.stderr
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    partial = decided_pairs(store)
    assert 2 <= len(partial) < len(DECISIONS)
    assert len(set(partial)) == len(partial)
    assert subprocess.run(["git", "-C", str(store.root), "fsck", "--no-progress"], capture_output=True).returncode == 0

    env.pop("FAKE_MODEL_SLEEP")
    done = sweep(env, "--json")
    assert done.returncode == 0, done.stderr
    final = decided_pairs(store)
    assert collections.Counter(final) == collections.Counter(DECISIONS)  # each pair decided exactly once
    assert git(store.root, "status", "--porcelain") == ""
    index.ensure_fresh(store)
    assert [r["id"] for r in index.rows(store, "SELECT id FROM memories WHERE status = 'superseded'")] == ["vpn-old"]
    assert json.loads(sweep(env, "--json").stdout)["pairs"]["sent"] == 0


# ------------------------------------------------------------------ hook entry points


EVENTS = {
    "session-end": {"session_id": "sess-42", "transcript_path": "", "hook_event_name": "SessionEnd", "reason": "other"},
    "pre-compact": {"session_id": "sess-42", "transcript_path": "", "hook_event_name": "PreCompact",
                    "trigger": "auto", "custom_instructions": ""},
}


def _hook_log(home: Path) -> str:
    path = home / ".quipu-home" / "logs" / "session-hook.log"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("command", sorted(EVENTS))
def test_hook_returns_at_once_and_a_detached_worker_does_the_session_work(
    tmp_path: Path, quipu_env: Path, command: str,
) -> None:
    """The order, not the speed (that is bench/bench_sweep.py's): the model cannot answer until
    the test opens its gate, so the hook returning at all shows it did not wait for the worker."""
    store = build(tmp_path / "store", ("vpn-old", "vpn-new"), **{"vpn-new": {"session": "sess-42"}})
    gate = tmp_path / "model-may-answer"
    env = model_env(tmp_path, store, FAKE_MODEL_GATE=str(gate))
    event = {**EVENTS[command], "cwd": str(tmp_path)}
    done = quipu(command, "--hook", "--model", FAKE_MODEL, input=json.dumps(event), env=env)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert decided_pairs(store) == []  # the model is still held in the detached worker
    assert "started the per-session work" in _hook_log(quipu_env)
    gate.touch()
    wait_for(lambda: "done: 1 applied" in _hook_log(quipu_env))
    assert decided_pairs(store) == [("vpn-new", "vpn-old")]
    seen = [json.loads(x) for x in (tmp_path / "model-seen.jsonl").read_text().splitlines()]
    assert [s["purpose"] for s in seen] == ["curate", "enrich"]  # the pair, then the session's memories' aliases
    assert {s["child_marker"] for s in seen} == {"1"}  # the model child carries the recursion marker


@pytest.mark.parametrize("command", sorted(EVENTS))
def test_hook_does_nothing_inside_a_model_child(tmp_path: Path, quipu_env: Path, command: str) -> None:
    store = build(tmp_path / "store", ("vpn-old", "vpn-new"))
    env = {**model_env(tmp_path, store), "QUIPU_CHILD": "1"}
    done = quipu(command, "--hook", "--model", FAKE_MODEL, input=json.dumps(EVENTS[command]), env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert _hook_log(quipu_env) == ""
    assert not (store.cache_dir / "sweep.lock").exists()


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"cwd": 7}'])
def test_hook_fails_open_on_bad_input(tmp_path: Path, stdin: str) -> None:
    done = quipu("session-end", "--hook", input=stdin, env={"QUIPU_STORE": str(tmp_path / "no-store")})
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_worker_failure_is_logged_and_exits_zero(tmp_path: Path, quipu_env: Path) -> None:
    store = build(tmp_path / "store", ("vpn-old", "vpn-new"))
    done = quipu("session-end", "--worker", "--model", "bogus", env={"QUIPU_STORE": str(store.root)})
    assert (done.returncode, done.stdout) == (0, "")
    assert "worker failed" in _hook_log(quipu_env) and "unknown model" in _hook_log(quipu_env)


def test_session_end_in_the_foreground_only_checks_the_sessions_memories(tmp_path: Path) -> None:
    store = build(tmp_path / "store", **{"ledger-decided": {"session": "sess-7"}})
    env = model_env(tmp_path, store)
    done = quipu("session-end", "--session", "sess-7", "--model", FAKE_MODEL, "--max-calls", "10", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(q["loser"], q["winner"]) for q in report["queued"]] == [("open-decisions", "ledger-decided")]
    assert report["applied"] == []
    seen = [json.loads(x) for x in (tmp_path / "model-seen.jsonl").read_text().splitlines()]
    assert all("ledger-decided" in s["pair"] for s in seen if s["purpose"] == "curate")
    assert report["enrich"]["wanting"] == 1  # only the session's memory is asked for aliases


def test_a_capture_that_failed_is_named_in_the_session_log_and_the_json(tmp_path: Path, quipu_env: Path) -> None:
    """The model failed on capture (this stand-in knows only the curator's pairs): the session's
    log line and ``session-end --json`` say capture failed and why, not only that it could run."""
    from testing.transcripts import Transcript

    store = build(tmp_path / "store", ("vpn-old", "vpn-new"))
    t = Transcript("5c2d9e1a-0000-4c21-9d0a-3e4f5a6b7c8d", str(tmp_path))
    t.user("We moved the VPN config to the new gateway, remember that.")
    t.assistant("Noted: the VPN config lives on the new gateway.")
    path = t.write(tmp_path / "projects")
    env = model_env(tmp_path, store)
    args = ("session-end", "--session", t.session_id, "--transcript", str(path), "--model", FAKE_MODEL)

    worker = quipu(*args, "--worker", env=env)
    foreground = quipu(*args, "--json", env=env)

    assert worker.returncode == 0 and foreground.returncode == 0, foreground.stderr
    line = _hook_log(quipu_env).strip().splitlines()[-1]
    assert "capture FAILED: " in line and "exited 1" in line and "capture can run" in line
    assert "exited 1" in json.loads(foreground.stdout)["capture"]["error"]
    plain = quipu("session-end", "--session", "sess-none", "--model", FAKE_MODEL, env=env)
    assert "capture: not run (no session id, or no transcript file)" in plain.stdout


# ------------------------------------------------------------------ the recursion marker on the prompt path


def test_prompt_hook_prints_nothing_inside_the_child_marker(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("deploy-accident", "Production deploy accident",
                           "A deploy to production wiped the sessions table; always snapshot first.")])
    event = json.dumps({"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path),
                        "hook_event_name": "UserPromptSubmit", "prompt": "how do I deploy to production safely?"})
    env = {"QUIPU_STORE": str(store.root)}
    inside = run_prompt_hook(event, env={**env, "QUIPU_CHILD": "1"})
    assert (inside.returncode, inside.stdout) == (0, b"")
    outside = run_prompt_hook(event, env=env)
    assert outside.returncode == 0
    assert b"deploy-accident" in outside.stdout and b"additionalContext" in outside.stdout
