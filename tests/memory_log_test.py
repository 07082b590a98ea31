"""A memory's history (`quipu log --memory ID`, the History of `quipu show ID`) lists the commits
that changed its file or its event files, read from what each did, never from its message: a
hand edit, a teammate's commit a sync brought in and the merge that brought it, an undo of any of
them; not a commit that only names the memory in its trailers, nor a remote change the sync
refused. Through the real CLI, on real stores and remotes."""
from __future__ import annotations

import json
import os
from pathlib import Path

from quipu.capture import profile
from quipu.store.memory import memory_path, render_memory
from quipu.store.store import Store
from quipu.sync import sync
from testing.fixtures import git, hand_commit, make_store, memory, quipu


def run(store: Path, *args: str, cwd: Path | None = None) -> str:
    proc = quipu("--store", str(store), *args, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def trail(store: Path, memory_id: str) -> list[tuple[str, str]]:
    """(commit, what it did) of each entry of `quipu log --memory`, newest first."""
    entries = json.loads(run(store, "log", "--memory", memory_id, "--json"))
    return [(e["commit"], e["summary"]) for e in entries]


def history(store: Path, memory_id: str) -> list[str]:
    """The History lines of `quipu show`."""
    out = run(store, "show", memory_id)
    return [line.strip() for line in out.split("\nHistory:\n", 1)[1].splitlines()] if "\nHistory:\n" in out else []


def edited(store: Store, memory_id: str, old: bytes, new: bytes) -> dict[str, bytes | None]:
    data = (store.root / memory_path(memory_id)).read_bytes()
    assert old in data
    return {memory_path(memory_id): data.replace(old, new)}


def test_a_hand_edit_is_in_the_memorys_history_and_so_is_its_undo(tmp_path: Path) -> None:
    """The reported case: a hand edit committed with git was reverted by `undo --memory` but
    shown neither by `show` nor by `log --memory`."""
    root = make_store(tmp_path / "store").root
    run(root, "add", "CI runners use ubuntu-22.04", "-t", "ci", "--id", "ci-img")
    added = git(root, "rev-parse", "HEAD").strip()
    edit = hand_commit(root, "edit", edited(Store(root), "ci-img", b"22.04", b"24.04"))
    assert trail(root, "ci-img") == [
        (edit, "the edit of ci-img's text"),
        (added, 'the creation of ci-img (message: "quipu: add ci-img ci")'),
    ]
    assert history(root, "ci-img")[0].split()[0] == edit[:12] and history(root, "ci-img")[0].endswith(
        "the edit of ci-img's text")
    assert "Undid the edit of ci-img's text" in run(root, "undo", "--memory", "ci-img")
    undo = git(root, "rev-parse", "HEAD").strip()
    assert trail(root, "ci-img")[0] == (undo, "the undo of the edit of ci-img's text")  # its trailer says "store"
    lines = run(root, "log", "--memory", "ci-img").splitlines()
    assert [line.split()[0] for line in lines] == [undo[:12], edit[:12], added[:12]]
    assert len(history(root, "ci-img")) == 3


def test_a_teammates_edit_the_merge_that_brought_it_in_and_its_undo_are_listed(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    mine = make_store(tmp_path / "mine")
    sync.set_remote(mine, str(remote))
    mine.add(memory("ci-img", "CI image", "CI runners use ubuntu-22.04"))
    sync.sync(mine)
    theirs = sync.clone(str(remote), tmp_path / "theirs")[0]
    edit = hand_commit(theirs.root, "bump the runner image", edited(theirs, "ci-img", b"22.04", b"24.04"))
    run(theirs.root, "sync")
    run(mine.root, "label", "ci-img", "checked")  # a change of this side's own: the sync merges
    label = git(mine.root, "rev-parse", "HEAD").strip()
    run(mine.root, "sync")
    merge = git(mine.root, "rev-parse", "HEAD").strip()
    assert git(mine.root, "rev-parse", "HEAD^2").strip() == edit
    listed = dict(trail(mine.root, "ci-img"))
    assert listed[merge] == "a merge that brought in the edit of ci-img's text"
    assert listed[edit] == "the edit of ci-img's text"  # a plain commit: no trailer names it
    assert listed[label] == 'the label checked on ci-img (message: "quipu: label ci-img checked")'
    run(mine.root, "undo", edit)
    undo = git(mine.root, "rev-parse", "HEAD").strip()
    assert trail(mine.root, "ci-img")[0] == (undo, "the undo of the edit of ci-img's text")
    assert [line.split()[0] for line in history(mine.root, "ci-img")][:2] == [undo[:12], merge[:12]]


def test_a_remote_removal_the_sync_refused_is_not_in_the_memorys_history(tmp_path: Path) -> None:
    """A commit whose trailers claim an undo of lint-ruff's add, whose removal the sync refused,
    never changed this store's lint-ruff: it is not listed, whatever its message says."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    mine = make_store(tmp_path / "mine")
    sync.set_remote(mine, str(remote))
    added = mine.add(memory("lint-ruff", "Linter", "Use ruff for lint"))
    sync.sync(mine)
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(remote), str(attacker))
    hostile = hand_commit(attacker, "quipu: undo add lint-ruff\n\nQuipu-Action: undo\nQuipu-Memory: lint-ruff",
                          {memory_path("lint-ruff"): None})
    git(attacker, "push", "-q", "origin", "main")
    out = run(mine.root, "sync")
    assert "Refused" in out and mine.exists("lint-ruff")
    assert git(mine.root, "cat-file", "-t", hostile).strip() == "commit"  # in the store's history
    assert [sha for sha, _ in trail(mine.root, "lint-ruff")] == [added]
    assert not any(line.startswith(hostile[:12]) for line in history(mine.root, "lint-ruff"))


def test_only_what_a_commit_did_decides_whether_it_is_listed_and_what_it_is_called(tmp_path: Path) -> None:
    root = make_store(tmp_path / "store").root
    run(root, "add", "Deploys go through CI", "-t", "deploys", "--id", "deploy-ci")
    run(root, "add", "Builds run on Fridays", "-t", "builds", "--id", "build-day")
    store = Store(root)
    # Names deploy-ci in its trailers, but edits build-day: listed for build-day only, without
    # the message, which does not agree with what it did.
    claims = hand_commit(root, "quipu: label deploy-ci stale\n\nQuipu-Action: label\nQuipu-Memory: deploy-ci",
                         edited(store, "build-day", b"Fridays", b"Mondays"))
    # Names deploy-ci and says "label", but edits its text: listed, as the edit it is.
    says_label = hand_commit(root, "quipu: label deploy-ci stale\n\nQuipu-Action: label\nQuipu-Memory: deploy-ci",
                             edited(store, "deploy-ci", b"CI", b"the release train"))
    run(root, "label", "deploy-ci", "reviewed")
    labelled = git(root, "rev-parse", "HEAD").strip()
    deploy = dict(trail(root, "deploy-ci"))
    assert claims not in deploy
    assert deploy[says_label] == "the edit of deploy-ci's text"
    assert deploy[labelled] == 'the label reviewed on deploy-ci (message: "quipu: label deploy-ci reviewed")'
    assert dict(trail(root, "build-day"))[claims] == "the edit of build-day's text"
    assert "(no commit changed nosuch-id in" in run(root, "log", "--memory", "nosuch-id")
    # --action keeps the entries whose trailer records it and agrees with what the commit did
    filtered = json.loads(run(root, "log", "--memory", "deploy-ci", "--action", "label", "--json"))
    assert [e["commit"] for e in filtered] == [labelled]


def test_a_memory_brought_back_by_an_undo_keeps_its_earlier_history(tmp_path: Path) -> None:
    root = make_store(tmp_path / "store").root
    run(root, "add", "Staging Postgres listens on 5433", "--id", "pg-port")
    added = git(root, "rev-parse", "HEAD").strip()
    removed = hand_commit(root, "drop it", {memory_path("pg-port"): None})
    run(root, "undo", removed)
    back = git(root, "rev-parse", "HEAD").strip()
    assert trail(root, "pg-port") == [
        (back, "the undo of the removal of pg-port"),
        (removed, "the removal of pg-port"),
        (added, 'the creation of pg-port (message: "quipu: add pg-port Staging Postgres listens on 5433")'),
    ]


def test_a_memory_in_the_first_commit_and_the_profile_card_have_a_history(tmp_path: Path) -> None:
    template = make_store(tmp_path / "template")
    root = tmp_path / "store"
    git(tmp_path, "init", "-q", str(root))
    for rel in ("quipu.toml", ".gitignore"):
        if (template.root / rel).exists():
            (root / rel).write_bytes((template.root / rel).read_bytes())
    first = hand_commit(root, "a store made by hand", {memory_path("hand-made"): render_memory(
        memory("hand-made", "Hand made", "A memory in the first commit"))})
    assert trail(root, "hand-made") == [(first, "the creation of hand-made")]
    # The profile card has no memory file: its Quipu-Memory trailer names it, through commits
    # that changed the card (never one that changed only memories).
    store = Store(root)
    card = store.commit({profile.PROFILE_PATH: b"# Profile\n\n- Prefers short answers\n"}, "hand edit",
                        {"Quipu-Action": "edit", "Quipu-Memory": "profile"})
    hand_commit(root, "quipu: edit\n\nQuipu-Action: edit\nQuipu-Memory: profile",
                edited(store, "hand-made", b"first commit", b"first commit, edited"))
    assert trail(root, "profile") == [(card, 'the change to profile.md (message: "hand edit")')]


def test_every_usage_error_of_undo_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    root = make_store(tmp_path / "store").root
    run(root, "add", "Deploys go through CI", "--id", "deploy-ci")
    run(root, "label", "deploy-ci", "reviewed")
    head = git(root, "rev-parse", "HEAD").strip()
    for argv in ([], ["--memory", "deploy-ci", "--sweep", "sw-1"], [head, "--memory", "deploy-ci"],
                 ["--memory", "deploy-ci", head], [""], ["--memory", ""], ["--sweep="]):
        proc = quipu("--store", str(root), "undo", *argv)
        assert proc.returncode == 2 and "usage: quipu undo" in proc.stderr, (argv, proc.stderr)
        assert git(root, "rev-parse", "HEAD").strip() == head
    # The library refuses an empty name too: it must never read as "the commits of no sweep".
    for kwargs in ({"commit": ""}, {"memory": ""}, {"sweep": ""}, {"commit": head, "memory": ""}):
        try:
            Store(root).undo(**kwargs)
        except Exception as exc:  # noqa: BLE001 - the kind is checked below
            assert type(exc).__name__ == "InvalidMemory", exc
        else:
            raise AssertionError(f"undo({kwargs}) wrote something")
    assert git(root, "rev-parse", "HEAD").strip() == head


def test_inside_a_project_undo_of_a_per_user_memory_names_the_store_to_pass(tmp_path: Path) -> None:
    user_root = Path(os.environ["QUIPU_HOME"]) / "store"
    user = make_store(user_root)
    user.add(memory("user-kube", "Kube context", "The kube context is prod-eu"))
    user.label("user-kube", "checked")
    project = tmp_path / "proj"
    make_store(project / ".quipu").add(memory("proj-note", "Project", "A note of the project"))
    refused = quipu("undo", "--memory", "user-kube", cwd=project)
    assert refused.returncode == 1
    assert "user-kube is in the per-user store" in refused.stderr and f"add --store {user_root}" in refused.stderr
    assert "has no decision" not in refused.stderr
    logged = run(project / ".quipu", "log", "--memory", "user-kube", cwd=project)  # pinned: no per-user line
    assert "(no commit changed user-kube in" in logged
    walked = quipu("log", "--memory", "user-kube", cwd=project)
    assert walked.stdout.splitlines()[-1].endswith(f"`quipu --store {user_root} log --memory user-kube`)")
    assert "Undid the label checked on user-kube" in run(user_root, "undo", "--memory", "user-kube", cwd=project)
