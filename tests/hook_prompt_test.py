"""The UserPromptSubmit hook run exactly as Claude Code runs it: a real process, -I -S, JSON on stdin."""
from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from pathlib import Path

import pytest

from quipu.index import index
from quipu.prompt.hook import PromptEvent, run
from quipu.store.store import Store
from testing.fixtures import example_store, indexed_head, memory, run_prompt_hook

FIXTURES = Path(__file__).parent / "fixtures" / "claude"
HEAVY = ("yaml", "pygit2", "git", "numpy", "_yaml", "_pygit2")
# Each of these costs a large share of an interpreter start (``os`` alone about a sixth under -I -S;
# ``functools`` is what ``_sqlite3`` would pull in without the stand-in of indexread.sqlite_module;
# even the shared libraries ``_json`` and ``math`` cost more to load than their uses here).
SLOW_STDLIB = ("json", "re", "typing", "dataclasses", "subprocess", "sqlite3", "datetime", "enum", "tomllib",
               "os", "functools", "collections", "__future__", "_json", "math")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return example_store(tmp_path_factory.mktemp("shop") / "store")


def event(prompt: object, store: Store | None = None, **extra: object) -> str:
    data = json.loads((FIXTURES / "user_prompt_submit.json").read_text())
    data["prompt"] = prompt
    data["cwd"] = str(store.root) if store else "/nonexistent"
    data.update(extra)
    return json.dumps(data)


def hook(payload: bytes | str, store: Store | None = None, **env: str) -> tuple[str, bytes]:
    extra = {"QUIPU_STORE": str(store.root)} if store else {}
    extra.update(env)
    proc = run_prompt_hook(payload, env=extra)
    assert proc.returncode == 0
    return proc.stdout.decode(), proc.stderr


def test_hook_injects_the_matching_memory_as_claude_code_expects(shop: Store) -> None:
    out, err = hook(event("how do we deploy shop-api to production?", shop, session_id="s-inject"), shop)
    payload = json.loads(out)
    assert list(payload) == ["hookSpecificOutput"]
    spec = payload["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    assert "deploy-procedure" in spec["additionalContext"]
    assert len(spec["additionalContext"]) <= 1500
    assert err == b""


def test_hook_imports_nothing_heavy(shop: Store) -> None:
    proc = run_prompt_hook(
        event("how do we deploy shop-api to production?", shop, session_id="s-imports"),
        env={"QUIPU_STORE": str(shop.root)},
        extra_args=(),
    )
    assert proc.stdout  # it did the whole job
    # Run again with -X importtime, which lists every module the process imported.
    import subprocess
    from testing.fixtures import PROMPT_HOOK, real_python

    traced = subprocess.run(
        [real_python(), "-I", "-S", "-X", "importtime", str(PROMPT_HOOK)],
        input=event("how do we deploy shop-api to production?", shop, session_id="s-imports-2").encode(),
        capture_output=True,
        env={**os.environ, "QUIPU_STORE": str(shop.root)},
        timeout=30,
    )
    assert traced.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in traced.stderr.decode().splitlines() if "|" in line}
    assert "_sqlite3" in imported and "quipu" in imported
    assert not imported & set(HEAVY), imported & set(HEAVY)
    assert "site" not in imported
    # Standard-library modules that each cost a large part of an interpreter start stay off too.
    assert not imported & set(SLOW_STDLIB), imported & set(SLOW_STDLIB)


def test_a_heavy_import_on_the_prompt_path_would_be_caught(tmp_path: Path) -> None:
    """The import tracing above sees third-party imports: prove it on a script that imports yaml."""
    import subprocess
    from testing.fixtures import real_python

    script = tmp_path / "heavy.py"
    script.write_text("import sys\nsys.path.insert(0, %r)\nimport yaml\n" % os.path.dirname(os.path.dirname(__import__("yaml").__file__)))
    traced = subprocess.run([real_python(), "-I", "-S", "-X", "importtime", str(script)], capture_output=True, timeout=30)
    assert "yaml" in traced.stderr.decode()


def test_machine_turns_never_trigger_recall(shop: Store) -> None:
    prompts = json.loads((FIXTURES / "machine_prompts.json").read_text())
    for prompt in prompts:
        out, _ = hook(event(prompt, shop, session_id="s-machine"), shop)
        assert out == "", prompt


def test_conversational_prompt_stays_silent_even_with_a_rich_transcript(shop: Store, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "the production deploy of shop-api broke nginx with 502s"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "gunicorn timeout, deploy, postgres port 5433"}]}},
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out, _ = hook(event("ok go ahead", shop, transcript_path=str(transcript), session_id="s-conv"), shop)
    assert out == ""


def test_a_memory_is_injected_once_per_session(shop: Store) -> None:
    first, _ = hook(event("what port does postgres listen on locally?", shop, session_id="s-once"), shop)
    second, _ = hook(event("what port does postgres listen on locally?", shop, session_id="s-once"), shop)
    other, _ = hook(event("what port does postgres listen on locally?", shop, session_id="s-other"), shop)
    assert "postgres-port" in first
    assert "postgres-port" not in second
    assert "postgres-port" in other


def test_hook_does_nothing_inside_quipus_own_model_child(shop: Store) -> None:
    out, _ = hook(event("how do we deploy shop-api to production?", shop, session_id="s-child"), shop, QUIPU_CHILD="1")
    assert out == ""


def test_a_session_started_with_recall_off_gets_nothing(shop: Store) -> None:
    """The hook process stops at once (its first step reads the switch), and so does the recall
    the prompt server runs with a hook's environment."""
    payload = event("how do we deploy shop-api to production?", shop, session_id="s-off")
    assert hook(payload, shop, QUIPU_RECALL="off")[0] == ""
    prompt = PromptEvent.create(payload.encode())
    assert prompt is not None
    env = {"QUIPU_STORE": str(shop.root), "QUIPU_HOME": os.environ["QUIPU_HOME"]}
    assert run(prompt, {**env, "QUIPU_RECALL": "0"}) == ""
    assert "deploy-procedure" in run(prompt, env)


def test_stale_index_still_answers_and_a_refresh_catches_up(tmp_path: Path) -> None:
    store = example_store(tmp_path / "s")
    store.add(memory("kafka-lag", "Kafka consumer lag on orders", "the enrichment step is slow"))  # no refresh
    out, _ = hook(event("postgres port", store, session_id="s-stale"), store)
    assert "postgres-port" in out
    deadline = time.time() + 20
    while time.time() < deadline and indexed_head(store.root) != store.head():
        time.sleep(0.2)
    assert indexed_head(store.root) == store.head()
    out, _ = hook(event("why is the kafka consumer lag so high", store, session_id="s-stale-2"), store)
    assert "kafka-lag" in out


def _fuzz_inputs(store: Store, tmp_path: Path) -> list[tuple[bytes, dict[str, str]]]:
    rng = random.Random(1234)
    good = event("how do we deploy shop-api to production?", store).encode()
    cases: list[tuple[bytes, dict[str, str]]] = []
    for _ in range(60):  # truncations of a valid event
        cases.append((good[: rng.randrange(0, len(good))], {}))
    for _ in range(60):  # binary garbage
        cases.append((bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))), {}))
    for _ in range(40):  # valid JSON of the wrong shape
        cases.append((json.dumps(rng.choice([[], {}, None, 1, "x", {"prompt": 5}, {"prompt": None}, {"prompt": ["a"]},
                                              {"session_id": 1, "prompt": "deploy"}, {"prompt": "deploy", "cwd": 7},
                                              {"prompt": "deploy", "transcript_path": 3}])).encode(), {}))
    huge = tmp_path / "huge.jsonl"
    with open(huge, "wb") as fh:
        fh.write(b'{"type":"user","message":{"content":"' + b"x" * 30_000_000 + b'"}}\n')
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 1000)
    for path in (str(huge), str(binary), str(tmp_path), "/dev/null", "/nonexistent/t.jsonl", "\x00bad"):
        cases.append((event("deploy production", store, transcript_path=path.replace("\x00", "")).encode(), {}))
    cases.append((b'{"prompt": "deploy", "session_id": "../../etc/passwd"}', {}))
    cases.append((event("deploy", None).encode(), {"QUIPU_STORE": str(tmp_path / "missing-store")}))
    cases.append((b"x" * 2_000_000, {}))
    for _ in range(40):  # random unicode prompts, control characters, FTS syntax
        text = "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x3000), rng.randrange(0, 32)])) for _ in range(rng.randrange(1, 300)))
        cases.append((event(text, store).encode(), {}))
    # Things named as the transcript that are no regular file, and huge or endless ones.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.symlink(fifo, tmp_path / "link-to-fifo.jsonl")
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 36)
    specials = [str(fifo), str(tmp_path / "link-to-fifo.jsonl"), "/dev/zero", "/dev/urandom", "/dev/full",
                "/dev/stdin", "/proc/self/fd/0", str(sparse), str(huge)]
    prompts = ["deploy production", "how do we deploy shop-api to production?", "postgres port", "ok"]
    for n in range(300):
        cases.append((event(rng.choice(prompts), store, transcript_path=rng.choice(specials),
                            session_id=f"s-special-{n}").encode(), {}))
    # Huge prompts: plain, escaped, lone surrogates, a topic at either end or none.
    filler = "lorem ipsum dolor " * 50_000
    for n in range(60):
        body = rng.choice([filler, "\\u0041" * 150_000, "\\ud800" * 100_000, "\\\\" * 300_000, "x" * 900_000])
        topic = rng.choice(["", "how do we deploy shop-api to production?"])
        prompt = rng.choice([topic + " " + body, body + " " + topic])
        cases.append((('{"prompt": "' + prompt.replace('"', "") + '", "cwd": ' + json.dumps(str(store.root))
                       + f', "session_id": "s-huge-{n}"' + "}").encode(), {}))
    # Random JSON documents of the right shape with values of every type in every field.
    values: list[object] = [None, True, 0, -1, 1e308, "", "x" * 5000, [], {}, [1, [2, [3]]], {"a": {"b": None}},
                            "\u202e", "../../etc/passwd", str(fifo), "/dev/zero", "deploy production"]
    fields = ["prompt", "session_id", "transcript_path", "cwd", "hook_event_name"]
    while len(cases) < 1100:
        doc = {name: rng.choice(values) for name in fields if rng.random() < 0.8}
        if rng.random() < 0.7:
            doc["prompt"] = rng.choice(prompts)
        if rng.random() < 0.5:
            doc["cwd"] = str(store.root)
        cases.append((json.dumps(doc).encode(), {}))
    return cases


@pytest.mark.slow
def test_fuzzed_inputs_all_exit_zero_silently_or_with_valid_json(tmp_path: Path) -> None:
    """Issue 12: at least 1,000 generated inputs, FIFOs, devices and huge files included; none
    may hang (the 10 s guard raises), every one exits 0 with nothing or valid JSON. Speed itself
    is bench/bench_hook_input.py's."""
    store = example_store(tmp_path / "s")
    cases = _fuzz_inputs(store, tmp_path)
    assert len(cases) >= 1000
    for payload, env in cases:
        proc = run_prompt_hook(payload, env={"QUIPU_STORE": str(store.root), **env}, timeout=10)
        assert proc.returncode == 0
        assert proc.stderr == b""
        if proc.stdout:
            json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_missing_corrupt_and_locked_index_fail_open(tmp_path: Path) -> None:
    store = example_store(tmp_path / "s")
    ask = event("postgres port", store, session_id="s-broken")
    store.index_path.unlink()
    assert hook(ask, store)[0] == ""
    store.index_path.write_bytes(b"not a database" * 100)
    assert hook(ask, store)[0] == ""
    index.ensure_fresh(store, force_rebuild=True)
    db = sqlite3.connect(store.index_path, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    try:
        locked = run_prompt_hook(ask, env={"QUIPU_STORE": str(store.root)}, timeout=10)  # waiting would raise
        assert (locked.returncode, locked.stdout) == (0, b"")
    finally:
        db.execute("ROLLBACK")
        db.close()
    assert "postgres-port" in hook(ask, store)[0]
    log = Path(os.environ["QUIPU_HOME"]) / "logs" / "hook.log"
    assert log.is_file() and "prompt-hook" in log.read_text()


def test_not_a_store_fails_open(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    out, err = hook(event("deploy production", None), None, QUIPU_STORE=str(plain))
    assert out == "" and err == b""


def test_a_freshly_cloned_store_gets_its_index_built_in_the_background(tmp_path: Path) -> None:
    origin = example_store(tmp_path / "origin")
    clone = tmp_path / "clone"
    import subprocess

    subprocess.run(["git", "clone", "-q", str(origin.root), str(clone)], check=True)
    assert not (clone / ".cache" / "index.sqlite").exists()
    ask = event("what port does postgres listen on locally?", None, session_id="s-clone")
    assert hook(ask, None, QUIPU_STORE=str(clone))[0] == ""  # silent, but a refresh started
    deadline = time.time() + 20
    while time.time() < deadline and not (clone / ".cache" / "index.sqlite").exists():
        time.sleep(0.2)
    time.sleep(0.5)
    assert "postgres-port" in hook(ask, None, QUIPU_STORE=str(clone))[0]


def test_a_new_session_forgets_sessions_untouched_for_two_weeks_scanning_at_most_daily(tmp_path: Path) -> None:
    store = example_store(tmp_path / "s")
    sessions = store.root / ".cache" / "sessions"
    sessions.mkdir(parents=True)
    month_ago = time.time() - 30 * 86400
    old, legacy, recent = sessions / "old-session.ids", sessions / "legacy.json", sessions / "recent-session.ids"
    for path in (old, legacy, recent):
        path.write_text("postgres-port\n")
    for path in (old, legacy):
        os.utime(path, (month_ago, month_ago))
    ask = "what port does postgres listen on locally?"
    out, _ = hook(event(ask, store, session_id="s-new"), store)
    assert "postgres-port" in out
    assert not old.exists() and not legacy.exists() and recent.exists()
    assert (sessions / "s-new.ids").read_text().splitlines()[0] == "postgres-port"
    # Scanned today already: another new session leaves a stale file for tomorrow's scan.
    old.write_text("postgres-port\n")
    os.utime(old, (month_ago, month_ago))
    assert "postgres-port" in hook(event(ask, store, session_id="s-newer"), store)[0]
    assert old.exists()
    os.utime(sessions / ".pruned", (time.time() - 2 * 86400,) * 2)
    assert "postgres-port" in hook(event(ask, store, session_id="s-newest"), store)[0]
    assert not old.exists()

def test_modules_in_the_project_folder_never_stand_in_for_the_standard_library(shop: Store, tmp_path: Path) -> None:
    """Claude Code starts the hook in the user's project; a `_json.py` or `math.py` there is not imported."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("_json", "math", "posix", "_sqlite3", "quipu"):
        (project / f"{name}.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'a').write({name!r})\n")
    proc = run_prompt_hook(event("how do we deploy shop-api to production?", shop, session_id="s-shadow"),
                           env={"QUIPU_STORE": str(shop.root)}, cwd=project)
    assert proc.returncode == 0 and "deploy-procedure" in proc.stdout.decode()
    assert not (tmp_path / "imported").exists()


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-fifo", "device"])
def test_a_transcript_that_is_not_a_regular_file_never_blocks_the_hook(shop: Store, tmp_path: Path, kind: str) -> None:
    """Issue 12: a FIFO as transcript_path blocked the hook on open until Claude Code killed it."""
    fifo = tmp_path / "transcript.fifo"
    os.mkfifo(fifo)
    path = {"fifo": str(fifo), "device": "/dev/zero"}.get(kind)
    if path is None:
        path = str(tmp_path / "transcript.jsonl")
        os.symlink(fifo, path)
    payload = event("how do we deploy shop-api to production?", shop, session_id=f"s-{kind}", transcript_path=path)
    proc = run_prompt_hook(payload, env={"QUIPU_STORE": str(shop.root)}, timeout=10)  # a hang raises
    assert proc.returncode == 0 and proc.stderr == b""
    assert "deploy-procedure" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_huge_prompt_is_read_by_its_head_and_tail_only(shop: Store) -> None:
    """Issue 12: a 960 KB prompt took seconds in the hook. Its head and tail are read (a trace
    pasted at the end can be the topic); what lies in the middle is not looked at."""
    filler = "lorem ipsum dolor sit amet " * 20_000
    tail_topic = event(filler + "how do we deploy shop-api to production?", shop, session_id="s-huge-tail")
    out, _err = hook(tail_topic, shop)
    assert "deploy-procedure" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    escaped = json.dumps(json.loads(tail_topic), ensure_ascii=False).replace("lorem", "\\u006corem")
    out, _err = hook(escaped.replace("s-huge-tail", "s-huge-escaped"), shop)
    assert "deploy-procedure" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    middle_topic = event(filler + "what port does local postgres listen on?" + filler, shop, session_id="s-huge-mid")
    assert hook(middle_topic, shop)[0] == ""


def test_a_transcript_line_nested_too_deep_is_skipped_and_the_hook_still_recalls(shop: Store, tmp_path: Path) -> None:
    """A bad line in the transcript's tail must cost only that line, never the prompt's recall."""
    transcript = tmp_path / "deep.jsonl"
    transcript.write_bytes(b'{"type": "user", "message": {"content": "hello"}}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    out, err = hook(event("how do we deploy shop-api to production?", shop, transcript_path=str(transcript),
                          session_id="s-deep-transcript"), shop)
    assert "deploy-procedure" in out and err == b""


def test_a_prompt_of_several_megabytes_is_recalled_on_by_its_head(shop: Store, tmp_path: Path) -> None:
    """An event over a megabyte (a pasted log) still gets recall on the prompt's first part; one too
    large to read at all is named in the hook log, never dropped in silence."""
    filler = "lorem ipsum dolor sit amet " * 80_000  # about 2 MB
    payload = event("how do we deploy shop-api to production? " + filler, shop, session_id="s-two-mb")
    assert len(payload) > 2_000_000
    out, err = hook(payload, shop)
    assert "deploy-procedure" in json.loads(out)["hookSpecificOutput"]["additionalContext"] and err == b""
    home = tmp_path / "home"
    giant = event("how do we deploy shop-api to production? " + "x" * 33_000_000, shop, session_id="s-giant")
    proc = run_prompt_hook(giant, env={"QUIPU_STORE": str(shop.root), "QUIPU_HOME": str(home)})
    assert proc.returncode == 0 and proc.stdout == b""
    assert "no recall for this prompt" in (home / "logs" / "hook.log").read_text()
