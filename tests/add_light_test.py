"""`quipu add` as a person runs it: a fresh process that loads no libgit2, and leaves git, the
commit's trailers and the index exactly as any write does; the near-duplicate check finds through
the index exactly what comparing every memory finds."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from quipu.index import index, near
from quipu.index.derive import SUPERSEDING
from quipu.index.schema import fold_of, fold_words
from quipu.prompt.stem import TOKENIZE
from quipu.store.gitstore import FALLBACK_NAME
from quipu.store.store import Store
from testing.fixtures import add_all, git, make_store, memory, quipu, used_as_it_loads


def test_quipu_add_in_a_fresh_process_imports_no_pygit2_and_leaves_git_clean(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("aaaa00000001", "Staging database", "Staging runs postgres 15 on port 5433.")])
    note = tmp_path / "note.md"
    note.write_text("Releases are cut from the release branch every Tuesday by the on-call engineer.\n")
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "quipu", "--store", str(store.root), "add", "-t", "Release day",
         "-f", str(note), "--session", "sess-1", "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert traced.returncode == 0, traced.stderr
    imported = {line.split("|")[-1].strip() for line in traced.stderr.splitlines() if line.startswith("import time:")}
    assert {"quipu.store.secrets_scan", "quipu.store.gitstore"} <= imported  # the tracing sees the writer
    assert not {m for m in imported if m.split(".")[0] in ("pygit2", "_pygit2")}, "quipu add loaded libgit2"
    # Nothing an add does needs them at run time: typing (annotations only), dataclasses and the
    # inspect module they load (Memory, the log entries and refresh results are plain classes),
    # threading (a Store's per-thread state is threading.local itself, from _thread), and OpenSSL
    # (_hashlib: a small store's few hashes are the interpreter's own, quipu.lite.sha1).
    # Nor urllib.parse and ipaddress, ntpath and fnmatch (pathlib's Path.as_uri, Windows paths and
    # match), nor gettext and locale (argparse's message catalogs) when the interpreter has no
    # catalog folder: quipu.lite's stand-ins answer for them.
    spared = {"urllib.parse", "ipaddress", "ntpath", "fnmatch"} - used_as_it_loads("pathlib", ("ntpath", "fnmatch"))
    assert not imported & {"typing", "dataclasses", "inspect", "threading", "hashlib", "_hashlib", *spared}
    if not os.path.isdir(os.path.join(sys.base_prefix, "share", "locale")):
        assert not imported & {"gettext", "locale"}
    added = json.loads(traced.stdout)
    assert git(store.root, "status", "--porcelain") == ""
    assert git(store.root, "rev-parse", "HEAD").strip() == added["commit"]
    message = git(store.root, "log", "-1", "--format=%B")
    assert message.startswith(f"quipu: add {added['id']} Release day\n\n")
    assert f"Quipu-Action: add\nQuipu-Memory: {added['id']}\nQuipu-Session: sess-1\n" in message
    assert git(store.root, "log", "-1", "--format=%an <%ae>").strip() != f"{FALLBACK_NAME} <quipu@localhost>"
    assert git(store.root, "fsck", "--strict", "--no-dangling", check=False) == ""
    assert "quipu: commit" in git(store.root, "reflog", "-1")
    assert git(store.root, "show", f"HEAD:{added['path']}").startswith("---\n")
    found = quipu("--store", str(store.root), "search", "Tuesday release branch", "--json")
    assert found.returncode == 0, found.stderr
    assert added["id"] in [hit["id"] for hit in json.loads(found.stdout)]


def test_the_index_takes_an_added_memory_as_written(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("bbbb00000001", "Deploy", "Deploys go through CI.")])
    store.add(memory("bbbb00000002", "Backups", "Backups run nightly at 02:00 UTC."))
    landed = store.landed()
    assert landed is not None and landed.commit == store.head()
    assert index.ensure_fresh(store).action == "incremental"
    fresh = Store(store.root)  # another process: no write of its own to take, so it reads git
    rows = index.rows(fresh, "SELECT id FROM memories ORDER BY id")
    assert [r["id"] for r in rows] == ["bbbb00000001", "bbbb00000002"]
    index.ensure_fresh(store, force_rebuild=True)
    assert [r["id"] for r in index.rows(store, "SELECT id FROM memories ORDER BY id")] == ["bbbb00000001", "bbbb00000002"]


TEXTS = [
    ("Deploy rule", "Deploys go through CI, run scripts/deploy.sh --dry-run first."),
    ("deploy rule", "deploys go through the CI; run scripts/deploy.sh --dry-run first"),
    ("Deploy rule", "Deploys go through CI, run scripts/deploy.sh --canary first."),
    ("Config file", "The ﬁle lives in /etc/app.conf"),  # a ligature folds to "fi"
    ("Config file", "The file lives in /etc/app.conf"),
    ("Heat", "Set the oven to 400 K before baking"),  # the Kelvin sign folds to "k"
    ("Heat", "Set the oven to 400 K before baking"),
    ("Glyph", "abc\ue000 is the build icon"),  # a private-use character inside a word
    ("Glyph", "abc is the build icon"),
    ("Straße", "Die Straße ist gesperrt"),
    ("STRASSE", "die strasse ist gesperrt"),
    ("snake", "use the foo_bar helper"),
    ("snake", "use the foo bar helper"),
    ("a", "the"),
    ("A", "The"),
    ("Pipeline", "deploy→prod runs nightly — see “ops”"),  # symbols and punctuation split words alike
    ("Pipeline", "deploy prod runs nightly, see ops"),
    ("Accent", "cafe\u0301 opens at nine"),  # a combining mark: folded text kept
    ("Accent", "cafe opens at nine"),
    ("Mood", "ship it 🚀️ today"),  # an emoji and its variation selector
    ("Mood", "ship it today"),
]


def test_the_near_duplicate_check_through_the_index_finds_what_comparing_everything_finds(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory(f"cccc{i:08d}", title, body) for i, (title, body) in enumerate(TEXTS)])
    for title, body in TEXTS:
        expected = next((f"cccc{i:08d}" for i, (t, b) in enumerate(TEXTS) if near.same_claim(title, body, t, b)), None)
        found = near.near_duplicate(store, title, body)
        assert (found.id if found else None) == expected, (title, body)
    assert near.near_duplicate(store, "Config file", "The file lives in /etc/app.conf").id == "cccc00000003"


def test_a_packed_store_takes_an_add_and_commits_as_the_identity_git_config_gives(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("dddd00000001", "Ports", "The API listens on port 8080.")])
    git(store.root, "gc", "--quiet")  # every object packed: the writer reads them from the pack
    assert not [p for p in (store.root / ".git" / "objects").iterdir() if len(p.name) == 2]
    (tmp_path / "extra.gitconfig").write_text("[user]\n\tname = \"Ada \\\"Included\\\" Lovelace\" ; a comment\n")
    git(store.root, "config", "include.path", str(tmp_path / "extra.gitconfig"))  # asked of git config
    added = quipu("--store", str(store.root), "add", "The worker listens on port 9090.", "--title", "Worker port",
                  "--json")
    assert added.returncode == 0, added.stderr
    assert git(store.root, "log", "-1", "--format=%an <%ae>").strip() == 'Ada "Included" Lovelace <test@example.invalid>'
    assert git(store.root, "status", "--porcelain") == ""
    assert git(store.root, "fsck", "--strict", "--no-dangling", check=False) == ""
    assert "Ports" in git(store.root, "show", "HEAD:" + "memories/dd/dddd00000001.md")
    git(store.root, "config", "--unset", "include.path")
    git(store.root, "config", "user.name", "Local Name")  # the repository's own config wins over the global one
    again = quipu("--store", str(store.root), "add", "Cron runs at 02:00.", "--title", "Cron")
    assert again.returncode == 0, again.stderr
    assert git(store.root, "log", "-1", "--format=%an").strip() == "Local Name"


def test_the_branch_moves_as_git_moves_it_with_its_reflog(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    before = git(store.root, "rev-parse", "HEAD").strip()
    store.add(memory("eeee00000001", "Ports", "The API listens on port 8080."))
    after = git(store.root, "rev-parse", "HEAD").strip()
    assert git(store.root, "rev-parse", "HEAD~1").strip() == before
    for log in ("refs/heads/main", "HEAD"):
        last = (store.root / ".git" / "logs" / log).read_text().splitlines()[-1]
        assert last.startswith(f"{before} {after} Quipu Test <test@example.invalid> ") and last.endswith("\tquipu: commit")
    assert not (store.root / ".git" / "refs" / "heads" / "main.lock").exists()
    git(store.root, "config", "core.logAllRefUpdates", "false")  # git then appends only to reflogs that exist
    (store.root / ".git" / "logs" / "refs" / "heads" / "main").unlink()
    store.add(memory("eeee00000002", "Cron", "Cron runs at 02:00."))
    assert not (store.root / ".git" / "logs" / "refs" / "heads" / "main").exists()
    assert (store.root / ".git" / "logs" / "HEAD").read_text().splitlines()[-1].endswith("\tquipu: commit")
    assert git(store.root, "status", "--porcelain") == ""


def test_an_edited_settings_file_reaches_the_index_with_the_next_write(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory("ffff00000001", "Ports", "The API listens on port 8080.")])

    def recorded() -> dict[str, object]:
        return json.loads(index.rows(store, "SELECT value FROM meta WHERE key = 'config'")[0]["value"])

    assert recorded()["limit"] == 2  # the template's
    user = Path(os.environ["QUIPU_HOME"]) / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[recall]\nlimit = 4\n")
    add_all(store, [memory("ffff00000002", "Cron", "Cron runs at 02:00.")])
    assert recorded()["limit"] == 4
    user.write_text("[recall]\nlimit = 3\n")  # same size: the mtime tells
    add_all(store, [memory("ffff00000003", "Queue", "The queue drains every minute.")])
    assert recorded()["limit"] == 3


def test_a_memory_whose_text_the_tokenizer_splits_as_the_comparison_does_keeps_no_folded_copy() -> None:
    """Every character beside ASCII words, one code point in three up to U+2FFFF: where ``fold_of``
    keeps no folded text, SQLite's own tokenizer (the index's) finds each ASCII word the check folds."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{TOKENIZE}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    plain = [(cp, f"xq{chr(cp)}zv {chr(cp)}jw kp{chr(cp)}") for cp in range(0xA0, 0x30000, 3)
             if not 0xD800 <= cp <= 0xDFFF]
    plain = [(cp, text) for cp, text in plain if fold_of(text) is None]
    assert 1000 < len(plain) < 20000  # punctuation, spaces and symbols Unicode 3.2 knew; nothing else
    db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", plain)
    tokens: dict[int, set[str]] = {}
    for doc, term in db.execute("SELECT doc, term FROM v"):
        tokens.setdefault(doc, set()).add(term)
    for cp, text in plain:
        assert set(fold_words(text).split()) <= tokens[cp], hex(cp)
    assert fold_of("ﬁle") == "file" and fold_of("abc\ue000 x") == "abc x" and fold_of("plain text") is None


def test_the_near_duplicate_check_reads_only_what_the_index_finds(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    others = [memory(f"eeee{i:08d}", f"Note {i} — “quoted”", f"Café {i} → déjà vu, ﬁle {i}") for i in range(30)]
    add_all(store, [*others, memory("eeee99999999", "Staging ﬁle", "The staging ﬁle lives in /srv/app.conf")])
    sql, words = near.candidates_query("Staging file", "The staging file lives in /srv/app.conf")
    found = index.rows(store, sql, (near._match(words), *words))
    assert [row["id"] for row in found] == ["eeee99999999"]  # not the thirty other folded memories
    assert near.near_duplicate(store, "Staging file", "The staging file lives in /srv/app.conf").id == "eeee99999999"


def test_a_memory_s_own_supersedes_field_decides_nothing_and_doctor_names_it(tmp_path: Path) -> None:
    """A file may say it replaces any memory (a teammate's push, an older quipu's add): only a
    decision, an event one undo reverts, takes a memory out of force."""
    from quipu.doctor import check_claims

    store = make_store(tmp_path / "s")
    add_all(store, [memory("ffff00000001", "Old port", "The API listens on port 8080.")])
    store.add(memory("ffff00000002", "New port", "The API listens on port 9090.").with_changes(supersedes=("ffff00000001",)))
    index.ensure_fresh(store)
    assert index.rows(store, "SELECT status FROM memories WHERE id = 'ffff00000001'")[0]["status"] == "active"
    db = sqlite3.connect(index.index_file(store))
    plan = db.execute(f"EXPLAIN QUERY PLAN {SUPERSEDING}").fetchall()
    assert [row[3] for row in plan] == ["SCAN memories USING COVERING INDEX memories_supersedes"]
    found = check_claims(store)
    assert not found.ok and "quipu supersede ffff00000001 ffff00000002" in found.details[0]
    store.supersede("ffff00000001", "ffff00000002")
    index.ensure_fresh(store)
    assert check_claims(store).ok


def test_a_fresh_add_opens_the_index_once(tmp_path: Path) -> None:
    """The near-duplicate check and the refresh after the commit share one checked connection."""
    store = make_store(tmp_path / "s")
    add_all(store, [memory("abab00000001", "Ports", "The API listens on port 8080.")])
    index.ensure_fresh(store)
    program = ("import sys\nopened = []\n"
               "sys.addaudithook(lambda event, args: opened.append(args[0]) if event == 'sqlite3.connect' else None)\n"
               "from quipu import cli\ncode = cli.main(sys.argv[1:])\nprint(len(opened), file=sys.stderr)\n"
               "raise SystemExit(code)\n")
    added = subprocess.run([sys.executable, "-c", program, "--store", str(store.root), "add", "-t", "Cron",
                            "Cron runs at 02:00 every night.", "--json"], capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    assert added.stderr.strip().splitlines()[-1] == "1"
    found = index.rows(store, "SELECT id FROM memories WHERE title = 'Cron'")
    assert [row["id"] for row in found] == [json.loads(added.stdout)["id"]]


def test_a_one_memory_command_runs_without_the_cycle_collector_and_any_other_with_it() -> None:
    import gc

    from quipu import cli

    was = gc.isenabled()
    try:
        for argv, collects in ((["--store", "s", "add", "-t", "T", "body"], False), (["show", "abcd0001"], False),
                               (["import", "markdown", "notes"], True), (["serve"], True), ([], True),
                               (["--store=s", "label", "abcd0001", "stale"], False), (["search", "x"], True)):
            cli.set_collector(argv)
            assert gc.isenabled() is collects, argv
    finally:
        (gc.enable if was else gc.disable)()


def test_an_add_whose_text_the_scanner_decodes_loads_base64_then_and_judges_as_the_scanner_does(tmp_path: Path) -> None:
    """The add imports the secret scanner with base64 and binascii left for the texts that need
    them (quipu.lite.import_deferring): a text the scanner decodes is judged as in any process."""
    import base64

    from quipu.store import secrets_scan

    store = make_store(tmp_path / "s")
    add_all(store, [memory("eeee00000001", "Ports", "The API listens on port 8080.")])
    encoded = base64.b64encode(b"this is some example text for the docs page").decode()
    for text, secret in ((f"The docs example shows {encoded} which decodes to text.", False),
                         ("See aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xYz2 in the log.", True)):
        assert bool(secrets_scan.find_secrets(text)) is secret  # the scanner's own verdict, in this process
        traced = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "quipu", "--store", str(store.root), "add", "-t", "Example",
             text, "--force"], capture_output=True, text=True, timeout=60)
        assert (traced.returncode != 0) is secret, traced.stderr
        imported = {line.split("|")[-1].strip() for line in traced.stderr.splitlines() if line.startswith("import time:")}
        assert "base64" in imported  # decoded: loaded at that moment
    assert git(store.root, "status", "--porcelain") == ""
