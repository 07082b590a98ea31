"""The store: every mutation a commit, undo a revert that never collides, clear errors (issue 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quipu.index import index
from quipu.commands.search import search
from quipu.errors import ConflictError, FatalError, NoStore, NotFound
from quipu.store.store import Store
from testing.fixtures import git, make_store, memory, quipu, run_prompt_hook


def _status(store: Store) -> str:
    return git(store.root, "status", "--porcelain")


def _state(store: Store, memory_id: str) -> tuple[str, str | None, str]:
    row = index.rows(store, "SELECT status, superseded_by, labels FROM memories WHERE id = ?", (memory_id,))[0]
    return row["status"], row["superseded_by"], row["labels"]


@pytest.fixture
def store(store_path: Path) -> Store:
    return make_store(store_path)


def test_every_mutation_is_one_commit_with_trailers(store: Store) -> None:
    store.add(memory("note-a", "Staging uses blue green deploys"), session="s-1")
    store.add(memory("note-b", "Staging uses canary deploys"))
    store.supersede("note-a", "note-b", reason="canary replaced blue green")
    store.label("note-b", "unverified", detail="no such pipeline")
    entries = store.log()
    assert [e.action for e in entries] == ["label", "supersede", "add", "add", "init"]
    assert [e.memory for e in entries[:4]] == ["note-b", "note-a", "note-b", "note-a"]
    assert entries[1].trailers["Quipu-Supersedes"] == "note-a"
    assert entries[3].trailers["Quipu-Session"] == "s-1"
    assert len(git(store.root, "rev-list", "HEAD").split()) == 5
    assert _status(store) == ""


def test_undo_of_supersession_applies_cleanly_after_later_label_commits(store: Store) -> None:
    store.add(memory("old-fact", "The API lives on port 8080"))
    store.add(memory("new-fact", "The API lives on port 9090"))
    supersession = store.supersede("old-fact", "new-fact")
    store.label("old-fact", "unverified", detail="port probe failed")
    store.label("old-fact", "disputed")
    store.label("old-fact", "unverified", on=False)
    assert _state(store, "old-fact") == ("superseded", "new-fact", "disputed")

    made = store.undo(commit=supersession)

    assert len(made) == 1
    assert _state(store, "old-fact") == ("active", None, "disputed")  # later labels survive
    last = store.log(limit=1)[0]
    assert (last.action, last.trailers["Quipu-Reverts"]) == ("undo", supersession)
    assert _status(store) == ""


def test_undo_of_a_label_after_a_later_label_on_the_same_memory(store: Store) -> None:
    store.add(memory("cdn-note", "The CDN is CloudFront"))
    first = store.label("cdn-note", "unverified", detail="distribution not found")
    store.label("cdn-note", "verified-path")
    store.undo(commit=first)
    assert _state(store, "cdn-note") == ("active", None, "verified-path")
    # and the undo itself can be undone
    store.undo(commit=store.log(limit=1)[0].commit)
    assert _state(store, "cdn-note") == ("active", None, "unverified verified-path")
    assert _status(store) == ""


def test_undo_of_a_memory_last_action_reverts_only_that_action_and_never_its_creation(store: Store) -> None:
    store.add(memory("perm-rule", "Never push to main directly", cls="rule"))
    store.label("perm-rule", "unverified")
    store.undo(memory="perm-rule")
    assert _state(store, "perm-rule") == ("active", None, "")
    head = store.head()
    with pytest.raises(ConflictError, match="only its creation is left.*perm-rule stays") as caught:
        store.undo(memory="perm-rule")  # the next one back is the add: never undone
    assert "quipu retract perm-rule" in str(caught.value)
    assert store.head() == head and store.exists("perm-rule")
    assert (store.root / "memories/pe/perm-rule.md").exists()
    assert _status(store) == ""


def test_undo_sweep_reverts_every_commit_of_the_sweep_and_nothing_else(store: Store) -> None:
    for n in range(4):
        store.add(memory(f"dup-{n}", f"Duplicate note number {n}"))
    store.supersede("dup-0", "dup-3", sweep="sw-1")
    store.supersede("dup-1", "dup-3", sweep="sw-1")
    store.label("dup-2", "stale-path", sweep="sw-1")
    store.label("dup-3", "manual")  # not part of the sweep
    made = store.undo(sweep="sw-1")
    assert len(made) == 3
    assert [_state(store, f"dup-{n}") for n in range(4)] == [
        ("active", None, ""), ("active", None, ""), ("active", None, ""), ("active", None, "manual"),
    ]
    assert {e.trailers.get("Quipu-Undo-Sweep") for e in store.log(action="undo")} == {"sw-1"}
    with pytest.raises(NotFound, match="no commits left to undo"):
        store.undo(sweep="sw-1")
    assert _status(store) == ""


def test_undo_refuses_the_first_commit_and_unknown_commits(store: Store) -> None:
    init = store.log()[-1].commit
    with pytest.raises(ConflictError, match="cannot be undone"):
        store.undo(commit=init)
    with pytest.raises(NotFound, match="quipu log"):
        store.undo(commit="deadbeef")


def test_adding_an_existing_id_is_refused_and_loses_nothing(store: Store) -> None:
    store.add(memory("same-id", "The original"))
    with pytest.raises(ConflictError, match="already exists"):
        store.add(memory("same-id", "An impostor"))
    assert store.get("same-id").title == "The original"


def test_processes_racing_for_one_id_leave_exactly_one_winner(store: Store) -> None:
    code = (
        "import sys\nfrom quipu.store.store import Store\nfrom testing.fixtures import memory\n"
        "sys.stdin.readline()\n"
        "try:\n    Store(sys.argv[1]).add(memory('race-id', 'writer ' + sys.argv[2]))\n"
        "except Exception as exc:\n    print(type(exc).__name__); sys.exit(1)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(store.root), str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
        for n in range(6)
    ]
    for proc in procs:
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
    results = [(proc.wait(timeout=60), proc.stdout.read().strip()) for proc in procs]  # type: ignore[union-attr]
    assert sorted(rc for rc, _ in results) == [0, 1, 1, 1, 1, 1]
    assert {out for rc, out in results if rc} == {"ConflictError"}
    assert len(store.log(action="add")) == 1
    assert _status(store) == ""


def test_supersede_and_label_need_existing_memories(store: Store) -> None:
    store.add(memory("only-one", "A lonely memory"))
    with pytest.raises(NotFound):
        store.supersede("only-one", "missing-one")
    with pytest.raises(NotFound):
        store.label("missing-one", "unverified")
    with pytest.raises(NotFound, match="quipu list"):
        store.add(memory("third", "Replaces nothing real", supersedes=["missing-one"]))
    assert len(store.log()) == 2


def test_a_store_path_that_is_not_a_git_repository_is_a_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NoStore) as err:
        Store.find(str(plain))
    assert "not a git repository" in str(err.value) and "quipu init" in str(err.value)
    with pytest.raises(NoStore, match="quipu init"):
        Store.find(str(tmp_path / "missing"))
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    with pytest.raises(NoStore, match="not a quipu store"):
        Store.find(str(tmp_path / "repo"))


def test_init_refuses_a_folder_with_other_files(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.txt").write_text("precious")
    with pytest.raises(NoStore, match="not empty"):
        Store.init(busy)
    assert (busy / "thesis.txt").read_text() == "precious"
    assert not (busy / ".git").exists()


def test_a_detached_head_refuses_writes_clearly_and_still_reads(store: Store) -> None:
    store.add(memory("before-detach", "Written on the branch about pipelines"))
    git(store.root, "checkout", "-q", "--detach", "HEAD")
    with pytest.raises(ConflictError) as err:
        store.add(memory("after-detach", "Would be lost on a detached HEAD"))
    assert "detached" in str(err.value) and "git -C" in str(err.value) and "switch main" in str(err.value)
    assert [h.id for h in search(store, "pipelines").hits] == ["before-detach"]
    git(store.root, "switch", "-q", "main")
    store.add(memory("after-detach", "Written once the branch is back"))
    assert store.exists("after-detach") and _status(store) == ""


def test_a_persons_commit_landing_mid_write_is_kept_and_the_quipu_write_rebuilt_on_top(store: Store, tmp_path: Path) -> None:
    """A person's `git commit -a` holds git's index lock while their editor is open and moves the
    branch when they save. quipu, which already built its commit on the old tip, waits for the
    lock, finds the branch moved, and rebuilds its commit on the person's."""
    store.add(memory("base-note", "Something to build on"))
    notes = store.root / "notes.txt"
    notes.write_text("a person's own file\n")
    git(store.root, "add", "notes.txt")
    git(store.root, "commit", "-q", "-m", "person adds notes")
    notes.write_text("a person's own file, edited\n")
    tip_before = git(store.root, "rev-parse", "HEAD").strip()
    person, go = _person_committing(store, tmp_path, "-a")
    writer = _quipu_add_in_background(store, "mid-write")
    _wait_for(store.root / "memories/mi/mid-write.md")  # quipu built its commit and waits for git's lock
    go.touch()
    assert person.wait(timeout=30) == 0
    assert writer.wait(timeout=30) == 0
    quipu_commit = writer.stdout.read().strip()  # type: ignore[union-attr]
    person_commit = git(store.root, "rev-parse", "HEAD~1").strip()
    assert git(store.root, "rev-parse", "HEAD").strip() == quipu_commit
    assert git(store.root, "log", "-1", "--format=%s", person_commit).strip() == "person-commit"
    assert git(store.root, "rev-parse", f"{person_commit}~1").strip() == tip_before
    assert git(store.root, "show", "HEAD:notes.txt") == "a person's own file, edited\n"
    assert "memories/mi/mid-write.md" in git(store.root, "ls-tree", "-r", "--name-only", "HEAD")
    assert _status(store) == ""


def test_a_persons_commit_begun_before_a_quipu_write_fails_safely_and_can_be_rerun(store: Store, tmp_path: Path) -> None:
    """git's own compare-and-swap: a commit whose editor was open while quipu wrote refuses to
    overwrite the branch. Nothing is lost; the person runs the commit again."""
    (store.root / "notes.txt").write_text("staged by a person\n")
    git(store.root, "add", "notes.txt")
    person, go = _person_committing(store, tmp_path)
    writer = _quipu_add_in_background(store, "during-edit")
    assert writer.wait(timeout=30) == 0
    go.touch()
    assert person.wait(timeout=30) != 0  # "cannot lock ref 'HEAD': is at ... but expected ..."
    assert store.exists("during-edit")
    assert git(store.root, "diff", "--cached", "--name-only").split() == ["notes.txt"]  # still staged
    git(store.root, "commit", "-q", "-m", "person, second try")
    assert {"notes.txt", "memories/du/during-edit.md"} <= set(git(store.root, "ls-tree", "-r", "--name-only", "HEAD").split())
    assert _status(store) == ""


def _person_committing(store: Store, tmp_path: Path, *flags: str) -> tuple[subprocess.Popen[bytes], Path]:
    """`git commit` with an editor that waits until the test says go."""
    go, started = tmp_path / "go", tmp_path / "started"
    editor = f"sh -c 'touch {started}; while [ ! -f {go} ]; do sleep 0.02; done; echo person-commit > \"$1\"' editor"
    person = subprocess.Popen(["git", "-C", str(store.root), "commit", "-q", *flags], env={**os.environ, "GIT_EDITOR": editor})
    _wait_for(started)
    return person, go


def _quipu_add_in_background(store: Store, memory_id: str) -> subprocess.Popen[str]:
    code = (
        "import sys\nfrom quipu.store.store import Store\nfrom testing.fixtures import memory\n"
        "print(Store(sys.argv[1]).add(memory(sys.argv[2], 'Written while a person commits')))"
    )
    return subprocess.Popen([sys.executable, "-c", code, str(store.root), memory_id], stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).parent.parent)


def test_a_person_holding_the_index_lock_is_never_clobbered(store: Store) -> None:
    """quipu never removes a git lock it cannot prove a dead quipu writer left behind."""
    lock = store.root / ".git/index.lock"
    lock.write_bytes(b"a person's git owns this")
    store.add(memory("lock-wait", "Written while someone else holds git's index"))
    assert lock.read_bytes() == b"a person's git owns this"
    assert "memories/lo/lock-wait.md" in git(store.root, "ls-tree", "-r", "--name-only", "HEAD")
    lock.unlink()  # the person's git finishes
    store.add(memory("lock-free", "The next write stages what the last one could not"))
    assert _status(store) == ""


def test_a_ref_lock_held_briefly_by_git_is_waited_for(store: Store) -> None:
    """Regression (issue 2): libgit2 reports a held ref lock as OSError, which escaped as a crash."""
    lock = store.root / ".git/refs/heads/main.lock"
    lock.write_text("")
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom quipu.store.store import Store\nfrom testing.fixtures import memory\n"
         "Store(sys.argv[1]).add(memory('ref-wait', 'Written after the ref lock goes'))", str(store.root)],
        cwd=Path(__file__).parent.parent,
    )
    time.sleep(0.5)
    lock.unlink()
    assert writer.wait(timeout=30) == 0
    assert store.exists("ref-wait") and _status(store) == ""


def test_find_prefers_flag_then_env_then_nearest_dot_quipu(tmp_path: Path) -> None:
    project = tmp_path / "project" / "src"
    project.mkdir(parents=True)
    nearest = make_store(tmp_path / "project" / ".quipu")
    other = make_store(tmp_path / "other")
    assert Store.find(cwd=str(project), env={}).root == nearest.root
    assert Store.find(cwd=str(project), env={"QUIPU_STORE": str(other.root)}).root == other.root
    assert Store.find(str(nearest.root), cwd=str(project), env={"QUIPU_STORE": str(other.root)}).how == "--store"
    home = tmp_path / "home-data"
    with pytest.raises(FatalError, match="per-user default"):
        Store.find(cwd=str(tmp_path), env={"QUIPU_HOME": str(home)})


def _wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)


def test_a_dot_quipu_folder_that_is_no_store_is_passed_over_and_doctor_names_it(tmp_path: Path) -> None:
    """A project's own files under ``.quipu`` (no git repository, no quipu.toml) must not hide the
    per-user store: reads, writes and the prompt hook use it, and doctor says why."""
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".quipu").mkdir(parents=True)
    (project / ".quipu" / "notes.md").write_text("the team's notes, not a store\n")
    (project / "src").mkdir()
    env = {"HOME": str(home), "QUIPU_HOME": str(home / "q"), "QUIPU_COMMAND_SERVER": "off", "QUIPU_STORE": ""}
    assert quipu("init", env=env, cwd=project).returncode == 0
    user = home / "q" / "store"

    added = quipu("add", "The staging database is db-stage.internal", "--title", "Staging database",
                  "--id", "stg-db", env=env, cwd=project / "src")
    listed = quipu("list", "--json", env=env, cwd=project / "src")
    recalled = quipu("recall", "which host is the staging database on?", env=env, cwd=project)
    doctor = quipu("doctor", "--json", env=env, cwd=project)
    event = json.dumps({"session_id": "s1", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                        "prompt": "which host is the staging database on?"})
    hook = run_prompt_hook(event, env={**env, "QUIPU_PROMPT_SERVER": "off"}, cwd=project)

    assert added.returncode == 0, added.stderr
    assert (user / "memories" / "st" / "stg-db.md").is_file()
    assert [m["id"] for m in json.loads(listed.stdout)] == ["stg-db"]
    assert "db-stage.internal" in recalled.stdout
    assert hook.returncode == 0 and b"db-stage.internal" in hook.stdout
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "project store")
    assert check["ok"] is False and str(project / ".quipu") in check["summary"]
    assert f"quipu init {project / '.quipu'}" in check["details"][0]
    assert Store.find(cwd=str(project), env={"QUIPU_HOME": str(home / "q")}).root == user
    made = make_store(project / "sub" / ".quipu")  # a real store nearer still is the project's store
    assert Store.find(cwd=str(project / "sub"), env={"QUIPU_HOME": str(home / "q")}).root == made.root
