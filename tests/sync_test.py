"""`quipu sync` and `quipu clone` against real bare remotes and several real clones."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from quipu.index import index
from quipu.sync import sync
from quipu.errors import ConflictError, FatalError, NotFound
from quipu.store.memory import memory_path
from quipu.store.store import Store
from testing.fixtures import git, make_store, memory, quipu, synced_clones




def _tree(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD^{tree}").strip()


def _bodies(store: Store) -> set[str]:
    return {r["body"].strip() for r in index.rows(store, "SELECT body FROM memories")}


def _edit(store: Store, memory_id: str, body: str) -> str:
    old = store.get(memory_id)
    return store.add(old.with_changes(body=body + "\n"), action="fact-set", overwrite=True)


def test_three_clones_converge_after_fifty_seeded_rounds_of_random_changes(tmp_path: Path) -> None:
    """Issue 18: adds, edits, labels, supersessions and undos on three clones, synced in random order."""
    rng = random.Random(18)
    _remote, clones = synced_clones(tmp_path, 3)
    texts: dict[str, str] = {}  # commit -> the body text it wrote
    counter = 0
    for _round in range(50):
        for store in rng.sample(clones, len(clones)):
            for _op in range(rng.randint(1, 3)):
                ids = [r["id"] for r in index.rows(store, "SELECT id FROM memories")]
                kind = rng.choice(["add", "add", "edit", "label", "supersede", "undo"]) if ids else "add"
                counter += 1
                text = f"text number {counter} from {store.root.name}"
                try:
                    if kind == "add":
                        texts[store.add(memory(f"m{counter:04d}", f"Memory {counter}", text + "\n"))] = text
                    elif kind == "edit":
                        # An edit replaces this clone's text on purpose (the old one stays in history).
                        target = rng.choice(ids)
                        replaced = store.get(target).body.strip()
                        texts = {c: t for c, t in texts.items() if t != replaced}
                        texts[_edit(store, target, text)] = text
                    elif kind == "label":
                        store.label(rng.choice(ids), rng.choice(["reviewed", "unverified"]), rng.random() < 0.7)
                    elif kind == "supersede" and len(ids) > 1:
                        old, new = rng.sample(ids, 2)
                        store.supersede(old, new)
                    elif kind == "undo":
                        for sha in store.undo(memory=rng.choice(ids)):
                            reverted = git(store.root, "log", "-1", "--format=%B", sha)
                            for line in reverted.splitlines():
                                if line.startswith("Quipu-Reverts: "):
                                    texts.pop(line.split(": ", 1)[1], None)
                except (ConflictError, NotFound):
                    pass  # an undo that would conflict, a memory another clone's undo removed...
            if rng.random() < 0.7:
                sync.sync(store, push=rng.random() < 0.9)
    for _ in range(2):
        for store in clones:
            sync.sync(store)
    trees = {_tree(s) for s in clones}
    assert len(trees) == 1
    bodies = _bodies(clones[0])
    assert set(texts.values()) <= bodies, "a text written somewhere was lost"
    for store in clones:
        assert git(store.root, "status", "--porcelain") == ""
        assert subprocess.run(["git", "-C", str(store.root), "fsck", "--no-dangling"], capture_output=True).returncode == 0
        assert index.rows(store, "SELECT path FROM problems") == []


def test_ten_writers_on_each_of_two_clones_while_both_sync_in_a_loop(tmp_path: Path) -> None:
    """Issue 18: nothing lost, nothing duplicated."""
    _remote, (left, right) = synced_clones(tmp_path, 2)
    stop = threading.Event()
    errors: list[BaseException] = []

    def syncer(store: Store) -> None:
        try:
            while not stop.is_set():
                sync.sync(Store(store.root))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    loops = [threading.Thread(target=syncer, args=(s,)) for s in (left, right)]
    for t in loops:
        t.start()
    writers = []
    for side, store in (("l", left), ("r", right)):
        code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent.parent)!r})\n"
                "from quipu.store.store import Store\nfrom testing.fixtures import memory\n"
                f"s = Store({str(store.root)!r})\n"
                "for k in range(5):\n"
                f"    s.add(memory(f'{side}-w{{sys.argv[1]}}-{{k}}', 'note', 'body'))\n")
        writers += [subprocess.Popen([sys.executable, "-c", code, str(w)]) for w in range(10)]
    assert all(w.wait(timeout=300) == 0 for w in writers)
    stop.set()
    for t in loops:
        t.join(timeout=300)
    assert errors == []
    sync.sync(left)
    sync.sync(right)
    sync.sync(left)
    assert _tree(left) == _tree(right)
    for store in (left, right):
        ids = [r["id"] for r in index.rows(store, "SELECT id FROM memories")]
        assert len(ids) == len(set(ids)) == 100
        assert git(store.root, "status", "--porcelain") == ""


def test_a_force_pushed_remote_is_refused_and_the_store_is_unchanged(tmp_path: Path) -> None:
    """Issue 18: a rewritten remote tip is refused with a clear message."""
    remote, (left, right) = synced_clones(tmp_path, 2)
    left.add(memory("kept-note", "Kept", "kept"))
    sync.sync(left)
    sync.sync(right)
    git(right.root, "reset", "-q", "--hard", "HEAD~1")
    git(right.root, "push", "-q", "--force", "origin", "main")
    refs = ("for-each-ref", "refs/heads", "refs/remotes", "refs/quipu/synced")
    before = (left.head(), git(left.root, *refs), git(left.root, "status", "--porcelain"))
    with pytest.raises(sync.SyncError, match="rewritten \\(force-pushed\\)") as caught:
        sync.sync(left)
    assert "--accept-rewrite" in str(caught.value)
    assert (left.head(), git(left.root, *refs), git(left.root, "status", "--porcelain")) == before
    assert left.exists("kept-note")
    result = sync.sync(left, accept_rewrite=True)
    assert result.pushed and left.exists("kept-note")


def test_both_sides_edit_one_memory_and_both_texts_are_kept(tmp_path: Path) -> None:
    _remote, (left, right) = synced_clones(tmp_path, 2)
    left.add(memory("vpn-host", "VPN host", "vpn1.internal"))
    sync.sync(left)
    sync.sync(right)
    _edit(left, "vpn-host", "vpn2.internal (left)")
    sync.sync(left)
    _edit(right, "vpn-host", "vpn3.internal (right)")
    result = sync.sync(right)
    assert [k.memory for k in result.kept_both] == ["vpn-host"]
    copy = result.kept_both[0].copy
    assert right.get("vpn-host").body.strip() == "vpn3.internal (right)"  # the newer edit
    assert right.get(copy).body.strip() == "vpn2.internal (left)"
    sync.sync(left)
    rows = {r["id"]: r for r in index.rows(left, "SELECT id, status, superseded_by FROM memories")}
    assert rows[copy]["status"] == "superseded" and rows[copy]["superseded_by"] == "vpn-host"
    assert _tree(left) == _tree(right)
    left.undo(commit=result.supersessions[0])  # one undo keeps both active
    assert index.rows(left, "SELECT status FROM memories WHERE id = ?", (copy,))[0]["status"] == "active"


def test_a_supersession_meets_an_edit_and_an_undo_meets_a_label(tmp_path: Path) -> None:
    _remote, (left, right) = synced_clones(tmp_path, 2)
    for mid in ("old-note", "new-note", "third-note"):
        left.add(memory(mid, mid, mid))
    left.supersede("third-note", "new-note")
    sync.sync(left)
    sync.sync(right)
    left.supersede("old-note", "new-note")
    _edit(right, "old-note", "old note, edited")
    right.label("third-note", "reviewed")
    left.undo(memory="third-note")  # undoes the supersession of third-note
    sync.sync(left)
    sync.sync(right)
    sync.sync(left)
    rows = {r["id"]: r for r in index.rows(left, "SELECT id, status, labels, body FROM memories")}
    assert rows["old-note"]["status"] == "superseded" and rows["old-note"]["body"].strip() == "old note, edited"
    assert rows["third-note"]["status"] == "active" and rows["third-note"]["labels"] == "reviewed"
    assert _tree(left) == _tree(right)


def test_a_hostile_remote_is_refused_file_by_file_and_the_rest_merges(tmp_path: Path) -> None:
    remote, (left, right) = synced_clones(tmp_path, 2)
    left.add(memory("good-note", "Good", "good"))
    sync.sync(left)
    sync.sync(right)
    # Someone pushes, with plain git, a symlink, a file outside the schema, a settings change,
    # a removal that is not an undo, and one good memory.
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(remote), str(attacker))
    (attacker / "memories" / "ev").mkdir(parents=True)
    (attacker / "memories" / "ev" / "evil-link.md").symlink_to("/etc/passwd")
    (attacker / "run.sh").write_text("#!/bin/sh\n")
    (attacker / "quipu.toml").write_text('[sweep]\nmodel = "command:/bin/sh -c evil"\n')
    git(attacker, "rm", "-q", memory_path("good-note"))
    good = memory("remote-good", "Remote good", "arrived fine")
    from quipu.store.memory import render_memory
    (attacker / memory_path("remote-good")).parent.mkdir(parents=True, exist_ok=True)
    (attacker / memory_path("remote-good")).write_bytes(render_memory(good))
    git(attacker, "add", "-A")
    git(attacker, "commit", "-qm", "hostile")
    git(attacker, "push", "-q", "origin", "main")
    hostile = git(attacker, "rev-parse", "HEAD").strip()

    result = quipu("--store", str(left.root), "sync")
    assert result.returncode == 0, result.stderr
    assert "Refused 4 file(s)" in result.stdout
    lines = result.stdout.splitlines()
    for path in ("memories/ev/evil-link.md", "run.sh", "quipu.toml", memory_path("good-note")):
        line, = [ln for ln in lines if ln.startswith(f"  {path}: ")]
        assert f"commit {hostile[:12]}" in line  # each refusal names the commit that made the change
    assert left.exists("remote-good") and left.exists("good-note")
    assert not (left.root / "memories" / "ev").exists() and not (left.root / "run.sh").exists()
    assert "evil" not in (left.root / "quipu.toml").read_text()
    assert git(left.root, "status", "--porcelain") == ""
    # The merged result went back to the remote; a fresh clone gets it without the hostile files.
    fresh, refused, _held_back = sync.clone(str(remote), tmp_path / "fresh")
    assert refused == [] and fresh.exists("good-note") and fresh.exists("remote-good")


def test_clone_refuses_a_symlink_before_anything_is_checked_out(tmp_path: Path) -> None:
    origin = make_store(tmp_path / "origin")
    origin.add(memory("fine-note", "Fine", "fine"))
    (origin.root / "memories" / "zz").mkdir()
    (origin.root / "memories" / "zz" / "zz-link.md").symlink_to("/etc/passwd")
    git(origin.root, "add", "-A")
    git(origin.root, "commit", "-qm", "link")
    out = quipu("clone", str(origin.root), str(tmp_path / "copy"), "--json")
    assert out.returncode == 0, out.stderr
    assert "memories/zz/zz-link.md" in out.stdout
    copy = Store(tmp_path / "copy")
    assert copy.exists("fine-note") and not (tmp_path / "copy" / "memories" / "zz").exists()
    assert (copy.root / ".git" / "hooks" / "post-merge").exists() and copy.index_path.is_file()


def test_sync_without_a_remote_says_how_to_set_one(tmp_path: Path) -> None:
    store = make_store(tmp_path / "lonely")
    out = quipu("--store", str(store.root), "sync")
    assert out.returncode == 1 and "--set-remote URL" in out.stderr
    with pytest.raises(FatalError):
        sync.sync(store)


def test_session_end_syncs_only_when_asked(tmp_path: Path) -> None:
    remote, (left, right) = synced_clones(tmp_path, 2)
    left.add(memory("session-note", "Session note", "written in a session"))
    out = quipu("--store", str(left.root), "session-end", "--model", "scripted", "--max-calls", "1", "--sync")
    assert out.returncode == 0, out.stderr
    assert "Pushed main to origin" in out.stdout
    sync.sync(right)
    assert right.exists("session-note")


SKILL_MD = ("---\nname: rebase-with-local-changes\ndescription: Pull with rebase when the work tree has local changes.\n"
            "---\n1. `git stash`\n2. `git pull --rebase origin main`\n3. `git stash pop`\n")


def _cli(store: Path | Store, *args: str) -> str:
    root = store.root if isinstance(store, Store) else store
    out = quipu("--store", str(root), *args)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _deleted_ever(root: Path, path: str) -> str:
    return git(root, "log", "--all", "--diff-filter=D", "--format=%H %s", "--", path)


def test_the_profile_facts_and_skill_drafts_reach_a_second_machine_by_clone_and_by_sync(tmp_path: Path) -> None:
    """The profile did not survive sync or clone: clone refused profile.md as outside the schema
    and committed its removal, and the second machine had an empty card."""
    from quipu.skills import queue
    from quipu.store import schema

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    one = make_store(tmp_path / "one")
    _cli(one, "profile", "add", "identity", "The user is Maria, a backend engineer on the payments team")
    _cli(one, "fact", "set", "Maria's employer", "Acme Payments", "--since", "2024-02-01")
    queue.write_draft(one, "rebase-with-local-changes", SKILL_MD, {"candidate": "c0ffee123456", "sessions": 3})
    queue.write_refusal(one, "", None, {"candidate": "beef00000001", "reasons": ["seen in 2 sessions"]})
    queue.write_event(one, "rebase-with-local-changes", "promote",
                      {"by": "maria", "where": "/home/maria/.claude/skills/rebase-with-local-changes/SKILL.md"})
    assert schema.tree_problems(one.repo, skip=()) == []  # everything quipu wrote is in the schema
    _cli(one, "sync", "--set-remote", str(remote))

    cloned = quipu("clone", str(remote), str(tmp_path / "two"), "--json")
    assert cloned.returncode == 0, cloned.stderr
    assert json.loads(cloned.stdout)["refused"] == []
    two = Store(tmp_path / "two")
    card = _cli(two, "profile", "show")
    assert "Identity: The user is Maria, a backend engineer on the payments team" in card
    start = _cli(two, "session-start")
    assert "The user is Maria, a backend engineer on the payments team" in start
    assert "Acme Payments" in _cli(two, "search", "Maria employer")
    assert queue.draft_names(two) == ["rebase-with-local-changes"]
    assert {e.kind for e in queue.entries(two)} == {"draft", "refused"}
    assert git(two.root, "status", "--porcelain") == ""
    assert not os.access(two.root / "skills" / "drafts" / "rebase-with-local-changes" / "SKILL.md", os.X_OK)

    # Both machines change the card and the facts, then sync in turn.
    _cli(one, "profile", "add", "preference", "The user prefers small pull requests with one change each")
    _cli(two, "profile", "add", "environment", "The user works on Debian with Neovim and fish")
    _cli(one, "fact", "set", "Maria's employer", "Globex", "--since", "2025-06-01")
    _cli(two, "fact", "set", "Maria's team", "payments platform")
    for store in (one, two, one):
        out = quipu("--store", str(store.root), "sync", "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["refused"] == []
    assert _tree(one) == _tree(two)
    for store in (one, two):
        card = _cli(store, "profile", "show")
        for entry in ("Identity: The user is Maria", "Preference: The user prefers small pull requests",
                      "Environment: The user works on Debian"):
            assert entry in card, (store.root, card)
        assert "Environment: The user works on Debian" in _cli(store, "session-start")
        assert "Globex" in _cli(store, "search", "Maria employer")
        assert "payments platform" in _cli(store, "search", "Maria team")
        assert schema.tree_problems(store.repo, skip=()) == []
    for path in ("profile.md", "skills", "memories"):
        assert _deleted_ever(remote, path) == ""  # nothing was ever removed on the way


def test_two_sides_edits_of_the_profile_meet_line_by_line() -> None:
    from quipu.sync.policy import merge_profile

    head = "<!-- quipu profile -->\n# Profile\n\n"
    a = "- Identity: The user is Maria <!-- origin=user since=2026-01-02 stable=12 -->"
    b = "- Preference: The user prefers tabs <!-- origin=session since=2026-01-03 stable=12 -->"
    b_confirmed = b.replace("origin=session", "origin=user")
    c = "- Environment: The user works on Debian <!-- origin=user since=2026-02-01 stable=12 -->"
    d = "- Working style: The user reviews every diff <!-- origin=user since=2026-02-02 stable=12 -->"
    base = f"{head}{a}\n{b}\n".encode()
    # Each side adds a line; the remote's comes after ours, nothing is lost.
    merged = merge_profile(base, f"{head}{a}\n{b}\n{c}\n".encode(), f"{head}{a}\n{b}\n{d}\n".encode()).decode()
    assert merged == f"{head}{a}\n{b}\n{c}\n{d}\n"
    # The remote demoted a line (it left the card for a memory) that we left alone: it stays gone.
    merged = merge_profile(base, f"{head}{a}\n{b}\n{c}\n".encode(), f"{head}{a}\n".encode()).decode()
    assert merged == f"{head}{a}\n{c}\n"
    # The remote confirmed a line we left alone; we removed one it left alone.
    merged = merge_profile(base, f"{head}{b}\n".encode(), f"{head}{a}\n{b_confirmed}\n".encode()).decode()
    assert merged == f"{head}{b_confirmed}\n"
    # A line one side changed and the other removed stays, changed.
    merged = merge_profile(base, f"{head}{a}\n".encode(), f"{head}{a}\n{b_confirmed}\n".encode()).decode()
    assert merged == f"{head}{a}\n{b_confirmed}\n"
    # No common version (two stores that met later): the union.
    merged = merge_profile(None, f"{head}{a}\n".encode(), f"{head}{c}\n".encode()).decode()
    assert merged == f"{head}{a}\n{c}\n"


def test_a_profile_edited_on_both_machines_keeps_every_added_line_through_sync(tmp_path: Path) -> None:
    remote, (left, right) = synced_clones(tmp_path, 2)
    quipu("--store", str(left.root), "profile", "add", "identity", "The user is Maria, a backend engineer")
    sync.sync(left)
    sync.sync(right)
    _cli(left, "profile", "add", "preference", "The user prefers small pull requests")
    _cli(right, "profile", "add", "working-style", "The user reviews every diff before a commit")
    first = sync.sync(left)
    second = sync.sync(right)
    sync.sync(left)
    assert first.refused == second.refused == []
    assert _tree(left) == _tree(right)
    card = _cli(right, "profile", "show", "--json")
    entries = sorted(line["prefix"] for line in json.loads(card)["lines"])
    assert entries == ["Identity", "Preference", "Working style"]
    assert "Merged profile.md: both sides changed it (line by line)" in git(right.root, "log", "--merges", "--format=%B")


def test_every_kind_of_file_from_a_remote_is_checked_as_untrusted_input(tmp_path: Path) -> None:
    from quipu.skills import queue

    remote, (left, right) = synced_clones(tmp_path, 2)
    queue.write_event(left, "some-skill", "promote", {"by": "maria", "where": "/nowhere"})
    sync.sync(left)
    sync.sync(right)
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(remote), str(attacker))
    good = attacker / "skills" / "drafts" / "good-skill" / "SKILL.md"
    good.parent.mkdir(parents=True)
    good.write_text(SKILL_MD.replace("rebase-with-local-changes", "good-skill"))
    runnable = attacker / "skills" / "drafts" / "run-me" / "SKILL.md"
    runnable.parent.mkdir(parents=True)
    runnable.write_text("#!/bin/sh\nrm -rf ~\n")
    runnable.chmod(0o755)
    (attacker / "skills" / "drafts" / "Bad Name").mkdir()
    (attacker / "skills" / "drafts" / "Bad Name" / "SKILL.md").write_text("x\n")
    (attacker / "skills" / "drafts" / "good-skill" / "draft.json").write_text("[1, 2]\n")
    (attacker / "skills" / "drafts" / "good-skill" / "run.sh").write_text("echo\n")
    event = next((attacker / "skills" / "events" / "some-skill").iterdir())
    event.write_text('{"action": "promote", "where": "/home/maria/.bashrc"}\n')
    (attacker / "profile.md").write_bytes(b"# Profile\n\n- Identity: x\n" + b"- Preference: y\n" * 6000)
    git(attacker, "add", "-A")
    git(attacker, "commit", "-qm", "hostile skills and profile")
    git(attacker, "push", "-q", "origin", "main")

    result = sync.sync(left)
    reasons = {r.path: r.reason for r in result.refused}
    assert set(reasons) == {"skills/drafts/run-me/SKILL.md", "skills/drafts/Bad Name/SKILL.md",
                            "skills/drafts/good-skill/draft.json", "skills/drafts/good-skill/run.sh",
                            event.relative_to(attacker).as_posix(), "profile.md"}, reasons
    assert "executable" in reasons["skills/drafts/run-me/SKILL.md"]
    assert "never changed once written" in reasons[event.relative_to(attacker).as_posix()]
    assert "at most 65,536" in reasons["profile.md"]
    assert queue.draft_text(left, "good-skill") is not None  # the rest merged, and stays inert data
    assert not (left.root / "skills" / "drafts" / "run-me").exists()
    assert not (left.root / "profile.md").exists()


def test_clone_never_lets_a_url_be_read_as_an_option(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile = f"--upload-pack=touch {marker}; git-upload-pack"
    for args in (("clone", "--", hostile, str(tmp_path / "c1")), ("clone", f"--upload-pack=touch {marker}", "x")):
        out = quipu(*args)
        assert out.returncode in (1, 2) and not marker.exists(), out
    assert "refusing the remote URL" in quipu("clone", "--", hostile, str(tmp_path / "c2")).stderr
    with pytest.raises(FatalError):
        sync.clone(hostile, tmp_path / "c3")
    store = make_store(tmp_path / "s")
    out = quipu("--store", str(store.root), "sync", f"--set-remote={hostile}")
    assert out.returncode == 1 and "refusing the remote URL" in out.stderr and not marker.exists()
    assert "origin" not in git(store.root, "remote")
    # A store whose path starts with '-' is still cloned, written as ./-name: the URL goes after `--`.
    make_store(tmp_path / "-dash")
    out = quipu("clone", "./-dash", str(tmp_path / "copy"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert Store(tmp_path / "copy").head() is not None


def test_aliases_meet_three_ways_an_undone_enrichment_stays_undone() -> None:
    from quipu.sync import policy

    def version(body: str, *aliases: str) -> bytes:
        from quipu.store.memory import render_memory

        return render_memory(memory("deploy-gate", "Deploy gate", body, aliases=list(aliases), created="2026-01-01T00:00:00Z"))

    base = version("Releases wait for the gate.\n", "ship to prod", "release check")
    undone = version("Releases wait for the gate.\n")  # this store undid the sweep's aliases
    edited = version("Releases wait for the gate; Fridays need two approvals.\n", "ship to prod", "release check",
                     "friday deploys")
    merged = policy.merge_aliases(base, undone, edited, "memories/de/deploy-gate.md")
    assert merged == version("Releases wait for the gate; Fridays need two approvals.\n", "friday deploys")
    # Both sides changing the text is not an aliases-only change: the caller keeps both.
    assert policy.merge_aliases(base, edited, version("Other text.\n", "ship to prod"), "memories/de/deploy-gate.md") is None
