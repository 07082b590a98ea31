"""Past conversations (`quipu history`): archive, backfill, hooks, search, forget, promote."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quipu import cli
from quipu.history import archive, search_history
from quipu.index import embed
from quipu.history.archive import Layout
from quipu.history.feed import append_transcript
from quipu.history.search import search
from testing.transcripts import Transcript, compact

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-ant-api03-Zq8vX2mN4pL7rT1wY6uB3cK9dF5gH0jS"
S1 = "5d1c2a10-5b7e-4c21-9d0a-3e4f5a6b7c01"
S2 = "5d1c2a10-5b7e-4c21-9d0a-3e4f5a6b7c02"
S3 = "5d1c2a10-5b7e-4c21-9d0a-3e4f5a6b7c03"

SHOP_TURNS = [
    ("user", "The orders endpoint takes four seconds. Can you find out why?"),
    ("assistant", "I'll look at the query plan first.\n[Bash: psql -c 'EXPLAIN ANALYZE SELECT * FROM orders']\n"
                  "The orders query does a sequential scan: there is no index on orders.created_at."),
    ("user", f"Add the index with an Alembic revision. Here is the staging key if you need it: {KEY}"),
    ("assistant", "[Edit: /home/dev/shop/migrations/versions/4f2a_orders_created_at.py]\n"
                  "Added revision 4f2a with the index on orders.created_at."),
    ("user", "Café menu prices need a column too, but later."),
]


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    return claude / "projects"


def shop_session(projects: Path) -> Path:
    t = Transcript(S1, "/home/dev/shop")
    t.machine_turns()
    t.user(SHOP_TURNS[0][1])
    t.assistant({"type": "thinking", "thinking": "probably a missing index"}, "I'll look at the query plan first.")
    t.tool("Bash", "Seq Scan on orders " + "x" * 2_000_000, command="psql -c 'EXPLAIN ANALYZE SELECT * FROM orders'")
    t.assistant("The orders query does a sequential scan: there is no index on orders.created_at.")
    t.user(SHOP_TURNS[2][1])
    t.tool("Edit", "The file has been updated.", file_path="/home/dev/shop/migrations/versions/4f2a_orders_created_at.py")
    t.assistant("Added revision 4f2a with the index on orders.created_at.")
    t.machine_turns()
    # A line that is not UTF-8 (a Latin-1 "é"): kept, with a replacement character.
    t.raw(compact({"type": "user", "uuid": "latin1-line", "sessionId": S1, "cwd": "/home/dev/shop",
                   "promptSource": "typed", "timestamp": "2026-05-04T11:30:00.000Z",
                   "message": {"role": "user", "content": "Caf\u00e9 menu prices need a column too, but later."}},
                  ).replace("Caf\u00e9".encode(), b"Caf\xe9"))
    t.raw(b'{"parentUuid":"x","type":"user","message":{"role":"user","content":"this line was cut wh')
    return t.write(projects)


def blog_session(projects: Path) -> Path:
    t = Transcript(S2, "/home/dev/blog", branch="drafts")
    t.user("Which static site generator are we on?")
    t.assistant("Hugo 0.140, configured in hugo.toml.")
    t.user("I just moved to Melbourne, so the posts should go out at 9am AEST.")
    t.assistant("Noted: I set the publish schedule to 09:00 Australia/Melbourne.")
    path = t.write(projects)
    agent = Transcript(S2, "/home/dev/blog", sidechain=True)
    agent.user("Search the repo for every hugo shortcode and list them.")
    agent.assistant("Found 4 shortcodes: figure, youtube, note, aside.")
    agent.write(projects, f"{S2}/subagents/agent-a1b2c3.jsonl")
    return path


def archived(home: Layout | None = None) -> list[tuple[str, str, int, str, str]]:
    layout = home or Layout.default()
    return [(t.session, t.role, t.turn, t.text, t.project) for t in archive.all_turns(layout)]


def tree_bytes(folder: Path) -> bytes:
    """Every byte quipu wrote under ``folder`` about sessions (``pieces.sqlite`` is the embedding's
    vocabulary, copied from the wheel: "Melbourne" is one of its 32,000 pieces)."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "pieces.sqlite")


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_backfill_of_a_realistic_projects_tree(projects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 16: several projects, a sub-agent transcript, a cut last line, a non-UTF-8 line, a
    huge tool result, machine turns of every kind and a pasted key."""
    shop = shop_session(projects)
    blog_session(projects)
    (projects / "-home-dev-empty").mkdir()
    Transcript("5d1c2a10-0000-0000-0000-00000000000e", "/home/dev/empty").write(projects)  # no line at all
    outside = projects.parent / "elsewhere.jsonl"
    outside.write_bytes(shop.read_bytes())  # a link to a transcript outside the tree
    (projects / "-home-dev-empty" / "link.jsonl").symlink_to(outside)

    summary = run_json(capsys, "history", "index")
    assert isinstance(summary, dict)
    assert summary["turns_added"] == 9 and summary["sessions"] == 2 and summary["redactions"] == 1
    assert summary["bad_lines"] == 1  # the cut line
    why = {Path(s["path"]).name: s["why"] for s in summary["skipped"]}
    assert "sub-agent" in why["agent-a1b2c3.jsonl"] and "no human prompt" in why[
        "5d1c2a10-0000-0000-0000-00000000000e.jsonl"]
    assert "not followed" in why["link.jsonl"]

    turns = archived()
    shop = [(role, text) for s, role, _n, text, _p in turns if s == S1]
    expected = [(r, t.replace(KEY, "[REDACTED:provider-token]").replace("Café", "Caf\ufffd")) for r, t in SHOP_TURNS]
    assert shop == expected
    assert [n for s, _r, n, _t, _p in turns if s == S1] == [0, 1, 2, 3, 4]
    blog = [(role, text) for s, role, _n, text, project in turns if s == S2 and project == "/home/dev/blog"]
    assert [r for r, _ in blog] == ["user", "assistant", "user", "assistant"]
    assert not any("shortcode" in text for *_x, text, _p in turns)  # the sub-agent's turns

    home = Path(os.environ["QUIPU_HOME"]) / "history"
    everything = tree_bytes(home)
    assert KEY.encode() not in everything and KEY[10:30].encode() not in everything
    for machine in (b"task-notification", b"Stop hook feedback", b"No response requested", b"API Error",
                    b"continued from a previous conversation", b"deploy finished", b"scheduled check"):
        assert machine not in everything
    assert b"Seq Scan" not in everything  # tool output is never archived

    shelves = tree_bytes(home / "shelves")
    again = run_json(capsys, "history", "index")
    assert isinstance(again, dict) and again["turns_added"] == 0 and again["turns_updated"] == 0
    assert tree_bytes(home / "shelves") == shelves  # stable
    assert archived() == turns


def test_append_is_idempotent_as_a_session_grows() -> None:
    """A PreCompact then a SessionEnd: the grown assistant turn is replaced, nothing repeats."""
    projects = Path(os.environ["HOME"]) / "p"
    t = Transcript(S3, "/home/dev/api")
    t.user("Why is the healthcheck returning 503?")
    t.assistant("The readiness probe points at /ready, which the app does not serve.")
    path = t.write(projects)
    first = append_transcript(path)
    assert (first.added, first.updated) == (2, 0)
    t.assistant("I changed the probe path to /healthz in deploy/k8s.yaml.")  # same reply, more of it
    t.user("Thanks. Does staging use the same chart?")
    t.write(projects)
    second = append_transcript(path)
    assert (second.added, second.updated) == (1, 1)
    assert (append_transcript(path).added, append_transcript(path).updated) == (0, 0)
    turns = archived()
    assert [(n, r) for _s, r, n, _t, _p in turns] == [(0, "user"), (1, "assistant"), (2, "user")]
    assert "/healthz" in turns[1][3]
    hits = search("healthz probe path").hits
    assert [(h.turn, h.role) for h in hits][:1] == [(1, "assistant")]
    assert sum(1 for h in hits if h.turn == 1) == 1


def _event(path: Path, session: str, cwd: str) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(path), "cwd": cwd,
                       "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}).encode()


@pytest.mark.slow
def test_twenty_session_end_hooks_at_once_archive_every_turn_once(tmp_path: Path) -> None:
    """Issue 16: twenty terminals ending at once lose nothing and duplicate nothing."""
    projects = tmp_path / "projects"
    expected: dict[str, int] = {}
    paths = []
    for i in range(20):
        sid = f"9e0f{i:04d}-1111-2222-3333-444455556666"
        t = Transcript(sid, f"/home/dev/svc{i % 4}")
        for j in range(6):
            t.user(f"Terminal {i} question {j}: how is service {i} configured for region r{j}?")
            t.assistant(f"Service {i} reads region r{j} from config/regions.toml, entry {i * 10 + j}.")
        paths.append((t.write(projects), sid, t.cwd))
        expected[sid] = 12
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "quipu", "session-end", "--hook"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
             for _ in paths]
    for proc, (path, sid, cwd) in zip(procs, paths, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(_event(path, sid, cwd))
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=120) == 0
        assert proc.stdout is not None and proc.stdout.read() == b""
    layout = Layout.default()
    deadline = time.monotonic() + 300  # the detached workers finish on their own
    while time.monotonic() < deadline:
        counts = {sid: len(archive.session_turns(layout, sid)) for sid in expected}
        if counts == expected:
            break
        time.sleep(0.5)
    with layout.lock():  # every worker has released the lock
        lines = sum(len(p.read_bytes().splitlines()) for p in archive.session_files(layout))
        from quipu.history import index

        db = index.connect(layout.index)
        rows = db.execute("SELECT session, count(*), count(DISTINCT turn) FROM turns GROUP BY session").fetchall()
        db.close()
    assert {sid: len(archive.session_turns(layout, sid)) for sid in expected} == expected
    assert lines == 240
    assert {r[0]: (r[1], r[2]) for r in rows} == {sid: (12, 12) for sid in expected}


def test_search_outlives_the_transcripts_and_forget_removes_exactly_what_it_names(
        projects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 16: after the transcripts are deleted, search still finds their turns."""
    shop_session(projects)
    blog_session(projects)
    assert cli.main(["history", "index"]) == 0
    backup = projects.parent / "backup"
    shutil.copytree(projects, backup)
    shutil.rmtree(projects)  # Claude Code's cleanupPeriodDays
    hits = run_json(capsys, "history", "search", "Hugo static site generator")
    assert isinstance(hits, dict)
    assert hits["hits"][0]["session"] == S2 and hits["hits"][0]["project"] == "/home/dev/blog"
    assert hits["hits"][0]["ts"].startswith("2026-05-04")
    before = archived()

    removed = run_json(capsys, "history", "forget", "--matching", "sequential scan")
    assert removed == {"dry_run": False, "removed_turns": 1,
                       "sessions": [{"session": S1, "turns": [1], "whole": False}]}
    assert archived() == [t for t in before if "sequential scan" not in t[3]]
    home = Path(os.environ["QUIPU_HOME"]) / "history"
    assert b"sequential" not in tree_bytes(home)
    assert not [h for h in search("sequential scan query plan").hits if h.turn == 1 and h.session == S1]

    dry = run_json(capsys, "history", "forget", "--project", "/home/dev/blog", "--dry-run")
    assert isinstance(dry, dict) and dry["removed_turns"] == 4 and len(archived()) == len(before) - 1
    cutoff = next(t.ts for t in archive.all_turns(Layout.default()) if t.session == S1 and t.turn == 2)
    gone = run_json(capsys, "history", "forget", "--before", cutoff, "--project", "/home/dev/shop")
    assert isinstance(gone, dict) and gone["sessions"][0]["turns"] == [0]
    assert cli.main(["history", "forget", S2[:12]]) == 1  # a prefix of two sessions: refused
    assert run_json(capsys, "history", "forget", S2)["sessions"] == [  # type: ignore[index]
        {"session": S2, "turns": [0, 1, 2, 3], "whole": True}]
    left = archived()
    assert [(s, n) for s, _r, n, _t, _p in left] == [(S1, 2), (S1, 3), (S1, 4)]
    assert b"Melbourne" not in tree_bytes(home) and b"Hugo" not in tree_bytes(home)

    # The transcripts come back (a restore from a backup): forgotten turns stay forgotten.
    shutil.copytree(backup, projects)
    again = run_json(capsys, "history", "index")
    assert isinstance(again, dict) and again["turns_added"] == 0 and again["forgotten_left_out"] == 6
    assert archived() == left
    with pytest.raises(SystemExit):
        cli.main(["history", "forget", "--role", "user"])
    assert cli.main(["history", "forget"]) == 2  # nothing selected: a usage error


DEV_TURNS = [
    "Please run the migrations with Alembic before deploying.",
    "The CI pipeline failed on the lint step again.",
    "I prefer pnpm over npm for everything JavaScript in this repo.",
    "Let's rename the orders table to purchases.",
    "The staging database is on Postgres 16.",
    "Can you add a retry around the payment webhook?",
    "Done: the webhook handler now retries three times with backoff.",
    "Why does the test suite take four minutes?",
    "I'll profile the slow tests and report back.",
    "The flaky test was a race in the fixture teardown; fixed with a lock.",
    "Use the dark theme for the dashboard charts.",
    "We switched the cache from Redis to Valkey last month.",
    "Where does the build output go?",
    "The user can log in with GitHub once the OAuth app is approved.",
    "Bump the API version to 2.3 and tag the release.",
    "The Dockerfile copies the whole repo; add a .dockerignore.",
    "Which Python version do we support? 3.11 and up.",
    "The invoice PDF renders the totals in the wrong currency.",
    "I just moved to Melbourne",
    "Rotate the logs daily and keep fourteen days.",
]


def test_meaning_search_finds_a_turn_that_shares_no_word(tmp_path: Path) -> None:
    """Issue 16: "where does the user live now" finds "I just moved to Melbourne"."""
    t = Transcript("6a6a6a6a-0000-4000-8000-000000000001", "/home/dev/app")
    for i, text in enumerate(DEV_TURNS):
        (t.user if i % 2 == 0 else t.assistant)(text)
    append_transcript(t.write(tmp_path / "projects"))
    query = "where does the user live now"
    assert not set(query.split()) & set("I just moved to Melbourne".lower().split())
    hits = search(query).hits
    assert "I just moved to Melbourne" in [h.text for h in hits[:5]]
    assert "I just moved to Melbourne" not in [h.text for h in search(query, meaning=False).hits]
    melbourne = next(h for h in hits if h.text == "I just moved to Melbourne")
    assert melbourne.lexical_rank is None and melbourne.meaning_rank is not None
    # The library entry point for other front ends, with its filters.
    assert search_history(query, project="/home/dev/app", limit=3)[0]["project"] == "/home/dev/app"
    assert search_history(query, project="/home/dev/other") == []
    assert search_history(query, since="2026-06-01") == []
    assert {h["role"] for h in search_history("tests", role="assistant")} == {"assistant"}


def test_the_embedding_is_wordllamas_and_its_tokenizer_is_the_wheels() -> None:
    files = embed.locate()
    assert files is not None
    from tokenizers import Tokenizer  # the reference implementation, installed with wordllama

    reference = Tokenizer.from_file(str(files.tokenizer))
    pieces = embed.Pieces.from_file(files.tokenizer)
    for text in ["I just moved to Melbourne", "naïve café façade → 東京", "EXPLAIN ANALYZE SELECT * FROM orders;"]:
        assert pieces.text(text) == reference.encode(text, add_special_tokens=False).ids
    import numpy as np
    from wordllama import WordLlama

    model = WordLlama.load(cache_dir=files.weights.parent.parent, disable_download=True)
    plain = embed.Embedder(embed.load_table(files.weights), pieces, zipf_c=0.0)
    texts = ["The staging database is on Postgres 16.", "I just moved to Melbourne"]
    assert np.allclose(plain.many(texts), model.embed(texts, norm=True), atol=1e-5)
    bulk = embed.Embedder(embed.load_table(files.weights), pieces, bulk=True)
    one = embed.Embedder(embed.load_table(files.weights), pieces)
    assert np.allclose(bulk.many(texts), one.many(texts), atol=1e-6)
    assert not one.one("").any()  # empty text: zero, not NaN


def test_show_prints_the_turns_around_a_hit(projects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blog_session(projects)
    assert cli.main(["history", "index"]) == 0
    shown = run_json(capsys, "history", "show", f"{S2[:8]}:2", "--context", "1")
    assert isinstance(shown, dict) and [t["turn"] for t in shown["turns"]] == [1, 2, 3]
    capsys.readouterr()
    assert cli.main(["history", "show", f"{S2}:2", "--context", "0"]) == 0
    out = capsys.readouterr().out
    assert "> [2]" in out and "Melbourne" in out and "Hugo" not in out
    assert cli.main(["history", "show", f"{S2}:99"]) == 1
    assert cli.main(["history", "show", "ffffffff"]) == 1


def test_promote_goes_through_captures_gates(projects: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    shop_session(projects)
    assert cli.main(["history", "index"]) == 0
    store = tmp_path / "store"
    assert cli.main(["init", str(store)]) == 0
    made = run_json(capsys, "--store", str(store), "history", "promote", f"{S1}:3",
                    "--title", "Orders are indexed on created_at", "--text",
                    "Revision 4f2a adds the index on orders.created_at.")
    assert isinstance(made, dict) and made["session"] == S1
    log = subprocess.run(["git", "-C", str(store), "log", "-1", "--format=%B"], capture_output=True, text=True,
                         check=True).stdout
    assert f"Quipu-Session: {S1}" in log and "Quipu-Action: promote" in log
    body = next(store.glob(f"memories/*/{made['id']}.md")).read_text()
    assert 'origin: "session"' in body and f'session: "{S1}"' in body
    commits = subprocess.run(["git", "-C", str(store), "rev-list", "--count", "HEAD"], capture_output=True,
                             text=True, check=True).stdout
    capsys.readouterr()
    # A turn phrased as a command is refused by the imperative gate; nothing is committed.
    assert cli.main(["--store", str(store), "history", "promote", f"{S1}:2", "--text",
                     "Always add the index with an Alembic revision."]) == 1
    assert "imperative gate" in capsys.readouterr().err
    assert subprocess.run(["git", "-C", str(store), "rev-list", "--count", "HEAD"], capture_output=True,
                          text=True, check=True).stdout == commits
    # A question states nothing: refused, with the command that shows the answer's turn, which works.
    assert cli.main(["--store", str(store), "history", "promote", f"{S1}:2", "--text",
                     "How do we add the index on orders?"]) == 1
    err = capsys.readouterr().err
    assert "a question, not a claim" in err
    shown = err.split("`quipu ", 1)[1].split("`", 1)[0].split()
    assert cli.main(shown) == 0 and "> [" in capsys.readouterr().out


def test_every_history_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for sub in ("index", "search", "show", "forget", "promote", "append"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["history", sub, "--help"])
        assert exit_info.value.code == 0
        assert f"usage: quipu history {sub}" in capsys.readouterr().out


def test_the_prompt_hook_never_touches_the_history() -> None:
    """The prompt path imports no module of quipu.history (nor numpy): its own guard covers the rest."""
    from quipu.prompt import PROMPT_PATH

    assert not [m for m in PROMPT_PATH if "history" in m]
    hook = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(ROOT / "hooks" / "prompt_submit.py")],
                          input=json.dumps({"prompt": "where does the user live now", "session_id": "s",
                                            "transcript_path": "", "cwd": "/"}).encode(),
                          capture_output=True, check=True)
    assert b"quipu.history" not in hook.stderr and b"numpy" not in hook.stderr


def test_the_quick_secret_check_never_skips_what_the_detector_finds() -> None:
    """The archive's one-pass pre-check is a necessary condition of secrets_scan.find_secrets."""
    import random
    import string

    from quipu.store import secrets_scan

    samples = [KEY, "xoxb-1234567890", "AKIAIOSFODNN7EXAMPLE", "ghp_" + "a1" * 12, "postgres://app:hunter2x@db",
               "password = s3cretvalue", "token: abcd1234efgh", "Bearer abcdefghijklmnopqrstuvwxyz123",
               "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----", "pwd=Passw0rd!!",
               "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"]
    rng = random.Random(16)
    alphabet = string.ascii_letters + string.digits + "+/=_-"
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(8, 40))) for _ in range(3000)]
    for text in samples:
        for framed in (text, f"see {text} here", f"({text})"):
            if secrets_scan.find_secrets(framed):
                assert archive.may_hold_secret(framed), framed
    assert not archive.may_hold_secret("I just moved to Melbourne, so the posts go out at 9am.")


def test_the_session_hook_archives_nothing_when_history_is_off(tmp_path: Path) -> None:
    t = Transcript("7b7b7b7b-0000-4000-8000-000000000001", "/home/dev/private")
    t.user("This conversation is private.")
    path = t.write(tmp_path / "projects")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QUIPU_HISTORY": "0"}
    done = subprocess.run([sys.executable, "-m", "quipu", "session-end", "--hook"], env=env, cwd=tmp_path,
                          input=_event(path, "7b7b7b7b-0000-4000-8000-000000000001", t.cwd), capture_output=True)
    assert done.returncode == 0 and done.stdout == b""
    log = Path(os.environ["QUIPU_HOME"]) / "logs" / "session-hook.log"
    assert "history append" not in (log.read_text() if log.exists() else "")
    assert not (Path(os.environ["QUIPU_HOME"]) / "history").exists()


def test_the_index_is_a_cache_rebuilt_from_the_archive(projects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blog_session(projects)
    assert cli.main(["history", "index"]) == 0
    before = [h.to_json() for h in search("static site generator").hits]
    layout = Layout.default()
    layout.index.unlink()
    layout.vectors.unlink()
    assert [h.to_json() for h in search("static site generator").hits] == before  # rebuilt on first use
    layout.index.write_bytes(b"not a database")
    assert run_json(capsys, "history", "index", "--rebuild") == {"rebuilt": True, "turns": 4}
    assert [h.to_json() for h in search("static site generator").hits] == before
