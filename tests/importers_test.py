"""Other assistants' exports into the past-conversation archive, other memory tools' stores into a store.

`quipu history import chatgpt|claude EXPORT.zip`, `quipu import claude-mem DB`, `quipu import
basic-memory DIR`: each fixture is written here in the format the tool itself writes."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from quipu.errors import FatalError
from quipu.history.exports import read_export
from testing.fixtures import make_store, quipu

KEY = "sk-ant-api03-Zq8vX2mN4pL7rT1wY6uB3cK9dF5gH0jS"


def _history() -> Path:
    return Path(os.environ["QUIPU_HOME"]) / "history"


def _tree_bytes(folder: Path) -> bytes:
    if not folder.is_dir():
        return b""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def _node(nid: str, parent: str | None, role: str | None, text: str, at: float, children: list[str]) -> dict[str, object]:
    message = None if role is None else {
        "id": nid, "author": {"role": role, "name": None, "metadata": {}}, "create_time": at, "update_time": None,
        "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully", "weight": 1.0,
        "metadata": {}, "recipient": "all"}
    return {"id": nid, "message": message, "parent": parent, "children": children}


def chatgpt_export(path: Path) -> Path:
    """A ChatGPT data export: conversations.json (a tree of messages per conversation) in a zip."""
    t = 1_746_000_000.0
    mapping = {
        "root": _node("root", None, None, "", t, ["sys"]),
        "sys": _node("sys", "root", "system", "You are ChatGPT.", t, ["u1"]),
        "u1": _node("u1", "sys", "user", "Why does the nightly rsync to the NAS stall at 4 GB?", t + 1, ["a1", "a1-old"]),
        "a1-old": _node("a1-old", "u1", "assistant", "An abandoned draft about quokka migrations.", t + 2, []),
        "a1": _node("a1", "u1", "assistant", "The NAS share is FAT32: a single file cannot pass 4 GB.", t + 3, ["u2"]),
        "u2": _node("u2", "a1", "user", f"Reformat it then. The backup token is {KEY}", t + 4, ["bad"]),
        "bad": {"id": "bad", "message": "not a message", "parent": "u2", "children": []},
    }
    mapping["a1"]["message"]["metadata"] = ["metadata of a shape no export has"]  # type: ignore[index]
    conversations = [
        {"id": "6803a1b2-0c4d-8000-9e1f-aa11bb22cc33", "title": "NAS backup stalls", "create_time": t,
         "update_time": t + 4, "mapping": mapping, "current_node": "bad", "moderation_results": []},
        "not a conversation",
        {"title": "no id and no mapping"},
    ]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", json.dumps(conversations))
        zf.writestr("user.json", json.dumps({"id": "user-1"}))
        zf.writestr("../../outside/conversations.txt", "a member whose name climbs out")
    return path


def claude_export(path: Path) -> Path:
    """A Claude.ai data export: conversations.json, a list with chat_messages, in a zip."""
    conversations = [
        {"uuid": "2f1e9c4a-77b0-4c1e-9a52-0d6b3f8e1a20", "name": "Heron camera", "created_at": "2026-03-02T09:00:00Z",
         "updated_at": "2026-03-02T09:05:00Z", "account": {"uuid": "acc-1"}, "chat_messages": [
             {"uuid": "m1", "sender": "human", "text": "Which lens for photographing herons at dawn?",
              "content": [{"type": "text", "text": "Which lens for photographing herons at dawn?"}],
              "created_at": "2026-03-02T09:00:00Z", "attachments": [], "files": []},
             {"uuid": "m2", "sender": "assistant", "text": "",
              "content": [{"type": "text", "text": "A 400mm prime at f/4 keeps the shutter fast in low light."}],
              "created_at": "2026-03-02T09:01:00Z", "attachments": [], "files": []},
             {"uuid": "m3", "sender": "human", "text": f"My camera API key is {KEY}", "content": [],
              "created_at": "2026-03-02T09:02:00Z"},
             {"uuid": "m4", "sender": 7, "text": "a sender that is no sender"},
             {"uuid": "m5", "sender": ["human"], "text": "a sender of a shape no export has"},
         ]},
        {"name": "a conversation without uuid", "chat_messages": []},
    ]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data-2026-03-03/conversations.json", json.dumps(conversations))
        zf.writestr("data-2026-03-03/users.json", "[]")
    return path


def _search(query: str) -> dict[str, object]:
    found = quipu("history", "search", query, "--json")
    assert found.returncode == 0, found.stderr
    value = json.loads(found.stdout)
    assert isinstance(value, dict)
    return value


def test_a_chatgpt_export_is_archived_labelled_redacted_and_searchable(tmp_path: Path) -> None:
    export = chatgpt_export(tmp_path / "chatgpt-export.zip")
    dry = quipu("history", "import", "chatgpt", str(export), "--dry-run", "--json")
    assert dry.returncode == 4, dry.stderr
    planned = json.loads(dry.stdout)
    assert (planned["turns_added"], planned["redactions"], planned["malformed_skipped"]) == (3, 1, 3)
    assert not _history().exists()  # a dry run writes nothing, not even the archive's lock file

    done = quipu("history", "import", "chatgpt", str(export), "--json")
    assert done.returncode == 4, done.stderr  # malformed entries were skipped: the rest is archived
    report = json.loads(done.stdout)
    assert (report["sessions"], report["turns_added"], report["redactions"]) == (1, 3, 1)
    assert report["malformed_skipped"] == 3  # one message that is no message, two conversations
    assert [s["path"] for s in report["skipped"]] == ["conversations.json[1]", "conversations.json[2]"]

    hits = _search("rsync NAS stall")["hits"]
    assert isinstance(hits, list) and hits
    assert hits[0]["agent"] == "chatgpt" and hits[0]["role"] == "user"
    assert hits[0]["session"] == "chatgpt-6803a1b2-0c4d-8000-9e1f-aa11bb22cc33"
    assert hits[0]["ts"].startswith("2025-04-30")
    assert not [h for h in _search("quokka migrations")["hits"] if "quokka" in h["text"]]  # not the branch shown
    assert KEY.encode() not in _tree_bytes(_history())
    assert KEY[:20].encode() not in _tree_bytes(_history())
    assert not (tmp_path.parent / "outside").exists() and not (Path.cwd().parent / "outside").exists()

    again = quipu("history", "import", "chatgpt", str(export), "--json")
    assert json.loads(again.stdout)["turns_added"] == 0


def test_a_claude_ai_export_is_archived_labelled_and_searchable(tmp_path: Path) -> None:
    export = claude_export(tmp_path / "claude-export.zip")
    done = quipu("history", "import", "claude", str(export))
    assert done.returncode == 4, done.stderr
    assert "Archived 3 turns from 1 conversations" in done.stdout and "3 malformed entries skipped" in done.stdout
    hits = _search("lens herons dawn")["hits"]
    assert isinstance(hits, list) and hits
    assert {h["agent"] for h in hits} == {"claude.ai"}
    reply = [h for h in hits if h["role"] == "assistant"]
    assert reply and "400mm prime" in reply[0]["text"]
    keyed = [h for h in _search("camera API key")["hits"] if h["role"] == "user" and "camera API" in h["text"]]
    assert keyed and KEY not in keyed[0]["text"]
    assert KEY.encode() not in _tree_bytes(_history())
    shown = quipu("history", "search", "herons")
    assert "(claude.ai)" in shown.stdout


def test_an_export_is_read_within_bounds_and_never_by_its_member_names(tmp_path: Path) -> None:
    export = claude_export(tmp_path / "claude-export.zip")
    with pytest.raises(FatalError, match="more than the 100 bytes"):
        read_export(export, limit=100)
    empty = tmp_path / "other.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("../conversations.txt", "[]")
    refused = quipu("history", "import", "chatgpt", str(empty))
    assert refused.returncode == 1 and "holds no conversations.json" in refused.stderr
    not_json = tmp_path / "broken.zip"
    with zipfile.ZipFile(not_json, "w") as zf:
        zf.writestr("conversations.json", "{\"cut")
    broken = quipu("history", "import", "claude", str(not_json))
    assert broken.returncode == 1 and "is not JSON" in broken.stderr
    assert not _history().joinpath("sessions").exists()
    with zipfile.ZipFile(export) as zf:  # the conversations.json of an export already unpacked
        (tmp_path / "conversations.json").write_bytes(zf.read("data-2026-03-03/conversations.json"))
    bare = quipu("history", "import", "claude", str(tmp_path / "conversations.json"), "--json")
    assert bare.returncode == 4 and json.loads(bare.stdout)["turns_added"] == 3, bare.stderr


CLAUDE_MEM_SCHEMA = """
CREATE TABLE sdk_sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, claude_session_id TEXT UNIQUE NOT NULL, sdk_session_id TEXT UNIQUE,
  project TEXT NOT NULL, user_prompt TEXT, started_at TEXT NOT NULL, started_at_epoch INTEGER NOT NULL,
  completed_at TEXT, completed_at_epoch INTEGER, status TEXT NOT NULL DEFAULT 'active');
CREATE TABLE observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT, sdk_session_id TEXT NOT NULL, project TEXT NOT NULL, text TEXT,
  type TEXT NOT NULL, title TEXT, subtitle TEXT, facts TEXT, narrative TEXT, concepts TEXT, files_read TEXT,
  files_modified TEXT, prompt_number INTEGER, created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL,
  discovery_tokens INTEGER DEFAULT 0);
CREATE TABLE session_summaries (
  id INTEGER PRIMARY KEY AUTOINCREMENT, sdk_session_id TEXT NOT NULL, project TEXT NOT NULL, request TEXT,
  investigated TEXT, learned TEXT, completed TEXT, next_steps TEXT, files_read TEXT, files_edited TEXT, notes TEXT,
  prompt_number INTEGER, created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL);
"""


def claude_mem_db(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(CLAUDE_MEM_SCHEMA)
    db.execute("INSERT INTO sdk_sessions (claude_session_id, sdk_session_id, project, started_at, started_at_epoch) "
               "VALUES ('c1', 's1', 'shop', '2026-02-01T10:00:00.000Z', 1769940000000)")
    rows = [
        ("discovery", "Orders query scans the whole table", "No index on orders.created_at",
         json.dumps(["EXPLAIN shows a sequential scan", "The table holds 40M rows"]),
         "The orders endpoint is slow because the query does a sequential scan.",
         json.dumps(["postgres", "performance"]), json.dumps(["app/orders.py"]), "[]"),
        ("decision", "Staging deploy key", None, "[]", f"The staging deploy key is {KEY}", "[]", "[]", "[]"),
        ("change", None, None, None, None, None, None, None),  # nothing to remember: skipped and counted
    ]
    for kind, title, subtitle, facts, narrative, concepts, read, modified in rows:
        db.execute("INSERT INTO observations (sdk_session_id, project, type, title, subtitle, facts, narrative, "
                   "concepts, files_read, files_modified, created_at, created_at_epoch) "
                   "VALUES ('s1', 'shop', ?, ?, ?, ?, ?, ?, ?, ?, '2026-02-01T10:05:00.000Z', 1769940300000)",
                   (kind, title, subtitle, facts, narrative, concepts, read, modified))
    db.execute("INSERT INTO session_summaries (sdk_session_id, project, request, learned, completed, next_steps, "
               "created_at, created_at_epoch) VALUES ('s1', 'shop', 'Speed up the orders endpoint', "
               "'created_at needs an index', 'Added migration 4f2a', 'Watch p95 latency', "
               "'2026-02-01T11:00:00.000Z', 1769943600000)")
    db.commit()
    db.close()
    return path


def _memories(store_root: Path) -> list[dict[str, object]]:
    listed = quipu("--store", str(store_root), "list", "--json")
    assert listed.returncode == 0, listed.stderr
    value = json.loads(listed.stdout)
    items = value["memories"] if isinstance(value, dict) else value
    return [json.loads(quipu("--store", str(store_root), "show", "--json", m["id"]).stdout) for m in items]


def test_a_claude_mem_database_is_imported_through_the_gates(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    db = claude_mem_db(tmp_path / "claude-mem.db")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    head = store.head()
    dry = quipu("--store", str(store.root), "import", "claude-mem", str(db), "--dry-run", "--json")
    assert dry.returncode == 4, dry.stderr
    planned = json.loads(dry.stdout)
    assert len(planned["imported"]) == 2 and planned["commit"] is None
    assert store.head() == head  # a dry run commits nothing

    done = quipu("--store", str(store.root), "import", "claude-mem", str(db), "--json")
    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    assert len(report["imported"]) == 2 and report["commit"]
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {"observations/2", "observations/3"}
    assert "secret" in skipped["observations/2"] and KEY not in done.stdout
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # read only
    memories = {m["title"]: m for m in _memories(store.root)}
    scan = memories["Orders query scans the whole table"]
    assert {"postgres", "performance", "discovery"} <= set(scan["topics"])  # type: ignore[arg-type]
    assert "sequential scan" in str(scan["body"]) and "The table holds 40M rows" in str(scan["body"])
    assert "Session: Speed up the orders endpoint" in memories
    # claude-mem names the folder a session ran in: a project by name, as `quipu add --project shop`
    assert {m["project"] for m in memories.values()} == {"shop"}
    assert KEY not in json.dumps(list(memories.values()))
    again = quipu("--store", str(store.root), "import", "claude-mem", str(db), "--json")
    assert json.loads(again.stdout)["imported"] == [] and len(json.loads(again.stdout)["already_in_the_store"]) == 2


def test_a_file_that_is_not_claude_mems_database_is_refused_in_one_line(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    refused = quipu("--store", str(store.root), "import", "claude-mem", str(other))
    assert refused.returncode == 1 and "has no observations or session_summaries table" in refused.stderr
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all " * 100)
    assert quipu("--store", str(store.root), "import", "claude-mem", str(text)).returncode == 1


def test_a_basic_memory_project_is_imported_with_tags_as_topics(tmp_path: Path) -> None:
    project = tmp_path / "basic-memory"
    (project / "coffee").mkdir(parents=True)
    (project / ".basic-memory").mkdir()
    (project / ".basic-memory" / "config.md").write_text("# internal\nnot a note\n")
    (project / "coffee" / "brewing.md").write_text(
        "---\ntitle: Coffee Brewing Methods\ntype: note\ntags: [coffee, brewing]\npermalink: coffee/brewing-methods\n"
        "---\n\n# Coffee Brewing Methods\n\n## Observations\n"
        "- [method] Pour over gives more clarity than a French press #extraction\n"
        "- [technique] Water at 96 C extracts best #temperature (measured)\n\n"
        "## Relations\n- relates_to [[Coffee Bean Origins]]\n")
    (project / "secrets.md").write_text(f"---\ntitle: Cloud\ntype: note\n---\n\n- [config] token {KEY}\n")
    (project / "empty.md").write_text("")
    store = make_store(tmp_path / "store")
    head = store.head()
    dry = quipu("--store", str(store.root), "import", "basic-memory", str(project), "--dry-run")
    assert dry.returncode == 4 and "Would import 1 note(s)" in dry.stdout, dry.stdout + dry.stderr
    assert store.head() == head

    done = quipu("--store", str(store.root), "import", "basic-memory", str(project), "--json")
    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    assert len(report["imported"]) == 1 and report["commit"]
    assert {s["path"] for s in report["skipped"]} == {"secrets.md", "empty.md"}
    [memory] = _memories(store.root)
    assert memory["title"] == "Coffee Brewing Methods"
    assert set(memory["topics"]) == {"coffee", "brewing", "extraction", "temperature"}  # type: ignore[arg-type]
    assert memory["aliases"] == ["coffee/brewing-methods"]
    assert "[[Coffee Bean Origins]]" in str(memory["body"])


def _stderr_on_a_terminal(*argv: str) -> str:
    """The command's stderr when it is a terminal (the progress a person sees)."""
    leader, follower = os.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "quipu", *argv], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=follower, timeout=120)
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal is closed once everything written was read
                break
            if not chunk:
                break
            seen += chunk
        assert done.returncode in (0, 4), seen
        return seen.decode("utf-8", "replace")
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


def test_progress_shows_on_a_terminal_and_nowhere_else(tmp_path: Path) -> None:
    export = chatgpt_export(tmp_path / "chatgpt-export.zip")
    assert "conversations [" in _stderr_on_a_terminal("history", "import", "chatgpt", str(export), "--dry-run")
    assert quipu("history", "import", "chatgpt", str(export), "--dry-run").stderr == ""
    store = make_store(tmp_path / "store")
    db = claude_mem_db(tmp_path / "claude-mem.db")
    seen = _stderr_on_a_terminal("--store", str(store.root), "import", "claude-mem", str(db))
    assert "Reading notes [" in seen and "Committing 2 notes" in seen
