"""Authority comes from effects, not words: sync and undo read what a commit did, never only what
its message says; and no command deletes a memory.

Remotes are real bare repositories; the other people are real `git` clones that commit with
plain git (`git rm`, forged trailers) and push; the victim runs the real `quipu` as a process."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from quipu.curate.ledger import load_ledger
from quipu.errors import ConflictError, NotFound
from quipu.index import index
from quipu.store import effects
from quipu.store.memory import memory_path, render_memory
from quipu.store.store import Store
from quipu.sync import sync
from testing.fixtures import git, make_store, memory, quipu

IDS = ("deploy-note", "vpn-host", "api-port", "db-owner", "cdn-rule")


def _victim_and_remote(tmp_path: Path) -> tuple[Store, Path]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    victim = make_store(tmp_path / "victim")
    for mid in IDS:
        victim.add(memory(mid, f"Note {mid}", f"what {mid} says"))
    sync.set_remote(victim, str(remote))
    sync.sync(victim)
    return victim, remote


def _teammate(tmp_path: Path, remote: Path, name: str = "mallory") -> Path:
    """A person's plain git clone of the store (no quipu)."""
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "config", "user.name", name)
    git(clone, "config", "user.email", f"{name}@example.com")
    return clone


def _commit_and_push(clone: Path, message: str, *extra: str) -> str:
    git(clone, "commit", "-q", *extra, "-m", message)
    git(clone, "push", "-q", "origin", "HEAD:main")
    return git(clone, "rev-parse", "HEAD").strip()


def _memories_on(repo: Path, ref: str = "main") -> set[str]:
    listed = git(repo, "ls-tree", "-r", "--name-only", ref, "memories").split()
    return {p.rsplit("/", 1)[1][:-3] for p in listed}


def _count(store: Store) -> int:
    return int(index.rows(store, "SELECT count(*) AS n FROM memories")[0]["n"])


def _sync(store: Store, *args: str) -> tuple[int, str, dict[str, object] | None]:
    out = quipu("--store", str(store.root), "sync", *args)
    assert out.returncode == 0, out.stderr
    return out.returncode, out.stdout, (json.loads(out.stdout) if "--json" in args else None)


@pytest.mark.parametrize("names", ["store", "the-add"])
def test_a_forged_undo_that_removes_every_memory_is_refused_and_nothing_is_lost(tmp_path: Path, names: str) -> None:
    """`git rm -r memories` committed as `Quipu-Action: undo` (naming nothing, or naming a real add)."""
    victim, remote = _victim_and_remote(tmp_path)
    mallory = _teammate(tmp_path, remote)
    git(mallory, "rm", "-r", "-q", "memories")
    reverts = victim.log(action="add")[0].commit if names == "the-add" else None
    trailers = "Quipu-Action: undo\nQuipu-Memory: store" + (f"\nQuipu-Reverts: {reverts}" if reverts else "")
    forged = _commit_and_push(mallory, f"quipu: undo tidy up\n\n{trailers}")
    assert _memories_on(remote) == set()

    _code, out, _ = _sync(victim)

    assert _count(victim) == len(IDS) and all(victim.exists(m) for m in IDS)
    assert _memories_on(remote) == set(IDS)  # the merge went back: the remote has them again
    assert f"Refused {len(IDS)} file(s)" in out and forged[:12] in out
    for mid in IDS:
        assert memory_path(mid) in out
    assert "not the exact inverse" in out and "no command deletes a memory" in out
    assert "claimed undo, not verified" in out and "undone" not in out.replace("claimed undo", "")
    assert git(victim.root, "status", "--porcelain") == ""
    # Mallory's own clone gets them back on the next pull.
    git(mallory, "pull", "-q", "--no-rebase", "origin", "main")
    assert _memories_on(mallory, "HEAD") == set(IDS)


def test_the_refusal_names_the_commit_in_json_too(tmp_path: Path) -> None:
    victim, remote = _victim_and_remote(tmp_path)
    mallory = _teammate(tmp_path, remote)
    git(mallory, "rm", "-q", memory_path("vpn-host"))
    forged = _commit_and_push(mallory, "quipu: undo\n\nQuipu-Action: undo\nQuipu-Memory: vpn-host")

    _code, _out, result = _sync(victim, "--json")

    assert result is not None
    assert result["refused"] == [{"path": memory_path("vpn-host"), "commit": forged,
                                  "reason": result["refused"][0]["reason"]}]  # type: ignore[index]
    assert [i["verified"] for i in result["incoming"] if i["commit"] == forged] == [False]  # type: ignore[index, union-attr]
    assert "undo" not in result["counts"]  # type: ignore[operator]
    assert victim.exists("vpn-host")


def test_a_true_inverse_of_an_add_this_store_had_is_refused_as_well(tmp_path: Path) -> None:
    """Even an exact `git revert` of the add, with every trailer right: this store had the memory."""
    victim, remote = _victim_and_remote(tmp_path)
    add = next(e.commit for e in victim.log(action="add") if e.memory == "db-owner")
    mallory = _teammate(tmp_path, remote)
    git(mallory, "revert", "--no-edit", add)
    git(mallory, "commit", "-q", "--amend", "-m",
        f"quipu: undo add db-owner\n\nQuipu-Action: undo\nQuipu-Memory: db-owner\nQuipu-Reverts: {add}")
    git(mallory, "push", "-q", "origin", "HEAD:main")
    revert = git(mallory, "rev-parse", "HEAD").strip()

    _code, out, _ = _sync(victim)

    assert victim.exists("db-owner") and _memories_on(remote) == set(IDS)
    assert revert[:12] in out and "which this store already had" in out


def test_a_genuine_undo_of_a_remote_add_this_store_never_saw_still_syncs(tmp_path: Path) -> None:
    victim, remote = _victim_and_remote(tmp_path)
    right = sync.clone(str(remote), tmp_path / "right")[0]
    right.add(memory("typo-note", "A note written by mistake", "wrong"))
    add = right.log(limit=1)[0].commit
    # Someone's older quipu undid the add before anyone synced: the exact inverse, named by its trailer.
    git(right.root, "revert", "--no-edit", add)
    git(right.root, "commit", "-q", "--amend", "-m",
        f"quipu: undo add typo-note\n\nQuipu-Action: undo\nQuipu-Memory: typo-note\nQuipu-Reverts: {add}")
    right.add(memory("good-note", "A good note", "right"))
    sync.sync(right)

    _code, _out, result = _sync(victim, "--json")

    assert result is not None and result["refused"] == []
    assert result["counts"] == {"add": 2, "undo": 1}
    assert victim.exists("good-note") and not victim.exists("typo-note")
    sync.sync(right)
    assert git(victim.root, "rev-parse", "HEAD^{tree}") == git(right.root, "rev-parse", "HEAD^{tree}")


def test_a_genuine_undo_of_a_decision_syncs_and_a_forged_one_is_refused(tmp_path: Path) -> None:
    victim, remote = _victim_and_remote(tmp_path)
    victim.supersede("api-port", "vpn-host")
    victim.label("db-owner", "unverified")
    sync.sync(victim)
    right = sync.clone(str(remote), tmp_path / "right")[0]
    right.undo(memory="api-port")  # a real undo: the exact inverse of the supersession
    sync.sync(right)
    mallory = _teammate(tmp_path, remote)
    events = git(mallory, "ls-files", "events/db/db-owner").split()
    git(mallory, "rm", "-q", *events)
    forged = _commit_and_push(mallory, "quipu: undo\n\nQuipu-Action: undo\nQuipu-Memory: db-owner")

    _code, out, result = _sync(victim, "--json")

    assert result is not None
    assert [r["commit"] for r in result["refused"]] == [forged] * len(events)  # type: ignore[index]
    assert result["counts"] == {"undo": 1, "undo-unverified": 1}
    rows = {r["id"]: r for r in index.rows(victim, "SELECT id, status, labels FROM memories")}
    assert rows["api-port"]["status"] == "active"  # the verified undo applied
    assert rows["db-owner"]["labels"] == "unverified"  # the forged one did not


def test_a_teammates_plain_git_revert_of_a_decision_is_an_undo_and_a_worded_one_is_not(tmp_path: Path) -> None:
    """"Undo is git revert": a teammate who takes a supersession back with `git revert` itself has
    undone it, on every clone, and the curator counts the pair as undone. The words `git revert`
    writes are only a pointer: a removal of another decision's events, worded the same, is refused."""
    victim, remote = _victim_and_remote(tmp_path)
    supersession = victim.supersede("api-port", "vpn-host")
    victim.label("db-owner", "unverified")
    sync.sync(victim)
    mallory = _teammate(tmp_path, remote)
    git(mallory, "revert", "--no-edit", supersession)
    git(mallory, "push", "-q", "origin", "HEAD:main")
    reverted = git(mallory, "rev-parse", "HEAD").strip()
    events = git(mallory, "ls-files", "events/db/db-owner").split()
    git(mallory, "rm", "-q", *events)
    worded = _commit_and_push(mallory, f"Revert \"label\"\n\nThis reverts commit {supersession}.")

    _code, out, result = _sync(victim, "--json")

    assert result is not None
    assert [r["commit"] for r in result["refused"]] == [worded] * len(events)  # type: ignore[index]
    assert {i["commit"]: (i["action"], i["verified"]) for i in result["incoming"]} == {  # type: ignore[union-attr]
        reverted: ("undo", True), worded: ("", True)}
    index.ensure_fresh(victim)
    rows = {r["id"]: r for r in index.rows(victim, "SELECT id, status, labels FROM memories")}
    assert rows["api-port"]["status"] == "active"  # the plain revert undid the supersession
    assert rows["db-owner"]["labels"] == "unverified"  # the worded removal did not
    assert load_ledger(victim).decided.get(("api-port", "vpn-host")) == "undone"


def test_a_forged_reverts_trailer_cannot_redirect_undo_to_a_memory_creation(tmp_path: Path) -> None:
    victim, remote = _victim_and_remote(tmp_path)
    supersession = victim.supersede("api-port", "vpn-host")
    sync.sync(victim)
    mallory = _teammate(tmp_path, remote)
    _commit_and_push(mallory, "quipu: undo supersede api-port by vpn-host\n\nQuipu-Action: undo\n"
                     f"Quipu-Memory: api-port\nQuipu-Reverts: {supersession}", "--allow-empty")
    _sync(victim)

    first = quipu("--store", str(victim.root), "undo", "--memory", "api-port")

    assert first.returncode == 0, first.stderr
    assert f"Undid the supersession of api-port by vpn-host (commit {supersession[:12]})" in first.stdout
    assert victim.exists("api-port")
    second = quipu("--store", str(victim.root), "undo", "--memory", "api-port")
    assert second.returncode == 1 and "only its creation is left" in second.stderr
    assert victim.exists("api-port")
    assert quipu("--store", str(victim.root), "show", "api-port").returncode == 0


def test_undo_memory_five_times_after_two_supersessions_never_deletes_it(store_path: Path) -> None:
    store = make_store(store_path)
    for mid in ("old-x", "new-y", "new-z"):
        store.add(memory(mid, f"Note {mid}", mid))
    by_y = store.supersede("old-x", "new-y")
    by_z = store.supersede("old-x", "new-z")
    said = []
    for _ in range(5):
        out = quipu("--store", str(store.root), "undo", "--memory", "old-x")
        said.append((out.returncode, out.stdout, out.stderr))
        assert quipu("--store", str(store.root), "show", "old-x").returncode == 0
        assert store.exists("old-x")

    assert said[0][0] == 0 and f"Undid the supersession of old-x by new-z (commit {by_z[:12]})" in said[0][1]
    assert f"Left to undo for old-x: the supersession of old-x by new-y (commit {by_y[:12]})" in said[0][1]
    assert said[1][0] == 0 and f"Undid the supersession of old-x by new-y (commit {by_y[:12]})" in said[1][1]
    assert "Left to undo for old-x: no decision (its creation stays" in said[1][1]
    for code, stdout, stderr in said[2:]:
        assert code == 1 and stdout == ""
        assert "only its creation is left" in stderr and "old-x stays" in stderr
        assert "quipu retract old-x" in stderr
    assert index.rows(store, "SELECT status FROM memories WHERE id = 'old-x'")[0]["status"] == "active"


def test_superseding_the_same_pair_twice_makes_one_commit(store_path: Path) -> None:
    store = make_store(store_path)
    store.add(memory("old-x", "Old", "old"))
    store.add(memory("new-y", "New", "new"))
    first = quipu("--store", str(store.root), "supersede", "old-x", "new-y")
    before = git(store.root, "rev-list", "--count", "HEAD")
    again = quipu("--store", str(store.root), "supersede", "old-x", "new-y")

    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert git(store.root, "rev-list", "--count", "HEAD") == before
    sha = store.log(action="supersede")[0].commit
    assert "already superseded by new-y; nothing was written" in again.stdout and sha[:12] in again.stdout
    assert len(store.log(action="supersede")) == 1
    # Once undone, superseding the pair again is a new decision.
    store.undo(commit=sha)
    assert store.supersede("old-x", "new-y") != sha


def test_undo_of_an_import_retracts_what_it_created_in_one_commit_that_one_undo_takes_back(
        store_path: Path, tmp_path: Path) -> None:
    store = make_store(store_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(40):
        (notes / f"note-{n:02d}.md").write_text(f"# Runbook step {n}\n\nStep {n} of the failover runbook.\n")
    assert quipu("--store", str(store.root), "import", "markdown", str(notes)).returncode == 0
    imported = store.log(limit=1)[0].commit

    undone = quipu("--store", str(store.root), "undo", imported)

    assert undone.returncode == 0, undone.stderr
    assert "the creation of 40 memories (" in undone.stdout and "and 37 more" in undone.stdout
    assert "and 30 more (`quipu list --status retracted`)" in undone.stdout and "[1 commit(s)" in undone.stdout
    assert len(list((store.root / "memories").rglob("*.md"))) == 40  # every one of them stays
    index.ensure_fresh(store)
    assert {r["status"] for r in index.rows(store, "SELECT status FROM memories")} == {"retracted"}
    undo_commit = store.log(limit=1)[0].commit
    assert effects.verified_revert(store.repo, store.repo[undo_commit]) == imported  # type: ignore[arg-type]
    again = quipu("--store", str(store.root), "undo", imported)
    assert again.returncode == 1 and "retracted" in again.stderr  # nothing left to take back
    assert quipu("--store", str(store.root), "undo", undo_commit).returncode == 0
    index.ensure_fresh(store)
    assert {r["status"] for r in index.rows(store, "SELECT status FROM memories")} == {"active"}


def test_retract_takes_a_memory_out_of_recall_and_search_and_undo_brings_it_back(store_path: Path) -> None:
    store = make_store(store_path)
    store.add(memory("zebra-fact", "Zebra crossing widths", "Zebra crossings here are four metres wide"))
    add = store.log(limit=1)[0].commit
    refused = quipu("--store", str(store.root), "undo", "--memory", "zebra-fact")
    assert refused.returncode == 1 and "undo never deletes a memory" in refused.stderr
    assert "quipu retract zebra-fact" in refused.stderr and store.exists("zebra-fact") and add

    def found() -> tuple[bool, bool]:
        search = quipu("--store", str(store.root), "search", "zebra crossing widths", "--json")
        recall = quipu("--store", str(store.root), "recall", "how wide are zebra crossings here", "--json")
        assert search.returncode == 0 and recall.returncode == 0, search.stderr + recall.stderr
        return "zebra-fact" in search.stdout, '"zebra-fact"' in recall.stdout.split('"left_out"')[0]

    assert found() == (True, True)
    out = quipu("--store", str(store.root), "retract", "zebra-fact", "--reason", "written by mistake")
    assert out.returncode == 0 and "Retracted zebra-fact" in out.stdout
    assert found() == (False, False)
    assert store.exists("zebra-fact") and quipu("--store", str(store.root), "show", "zebra-fact").returncode == 0
    back = quipu("--store", str(store.root), "undo", "--memory", "zebra-fact")
    assert back.returncode == 0 and "Undid the retraction of zebra-fact" in back.stdout
    assert found() == (True, True)


def test_undo_of_a_sweep_that_created_memories_retracts_them_instead(store_path: Path) -> None:
    store = make_store(store_path)
    store.add(memory("kept-a", "A", "a"))
    store.add(memory("swept-new", "Captured in a sweep", "b"), action="capture", sweep="sw-9")
    store.label("kept-a", "stale-path", sweep="sw-9")

    out = quipu("--store", str(store.root), "undo", "--sweep", "sw-9")

    assert out.returncode == 0, out.stderr
    assert "Undid the label stale-path on kept-a" in out.stdout and "swept-new" in out.stdout
    assert store.exists("swept-new")
    rows = {r["id"]: r for r in index.rows(store, "SELECT id, status, labels FROM memories")}
    assert rows["swept-new"]["status"] == "retracted" and rows["kept-a"]["labels"] == ""
    with pytest.raises(NotFound, match="no commits left to undo"):
        store.undo(sweep="sw-9")


def test_already_undone_is_read_from_the_store_not_from_trailers(store_path: Path) -> None:
    store = make_store(store_path)
    store.add(memory("cdn-note", "CDN", "cloudfront"))
    label = store.label("cdn-note", "unverified")
    # A hand-made commit claims to revert the label but changes nothing.
    git(store.root, "commit", "-q", "--allow-empty", "-m",
        f"quipu: undo\n\nQuipu-Action: undo\nQuipu-Memory: cdn-note\nQuipu-Reverts: {label}")
    made = store.undo(commit=label)  # still in force, so it is undone now
    with pytest.raises(ConflictError, match=f"already undone \\(by commit {made[0][:12]}\\)"):
        store.undo(commit=label)
    redo = store.log(limit=1)[0].commit
    store.undo(commit=redo)  # undoing the undo puts the label back, and it is in force again
    index.ensure_fresh(store)
    assert index.rows(store, "SELECT labels FROM memories WHERE id = 'cdn-note'")[0]["labels"] == "unverified"
    store.undo(memory="cdn-note")
    index.ensure_fresh(store)
    assert index.rows(store, "SELECT labels FROM memories WHERE id = 'cdn-note'")[0]["labels"] == ""


def test_the_curator_counts_a_pair_as_undone_only_when_an_undo_really_took_it_back(store_path: Path) -> None:
    store = make_store(store_path)
    for mid in ("pair-a", "pair-b", "pair-c", "pair-d"):
        store.add(memory(mid, f"Note {mid}", mid))
    real = store.supersede("pair-a", "pair-b")
    store.undo(commit=real)
    # A hand-made commit whose trailers claim to revert a supersession of pair-c by pair-d.
    git(store.root, "commit", "-q", "--allow-empty", "-m", "quipu: supersede pair-c by pair-d\n\n"
        "Quipu-Action: supersede\nQuipu-Memory: pair-c\nQuipu-Supersedes: pair-c\nQuipu-Superseded-By: pair-d")
    claimed = git(store.root, "rev-parse", "HEAD").strip()
    git(store.root, "commit", "-q", "--allow-empty", "-m",
        f"quipu: undo\n\nQuipu-Action: undo\nQuipu-Memory: pair-c\nQuipu-Reverts: {claimed}")
    index.ensure_fresh(store)

    ledger = load_ledger(store)

    assert ledger.decided.get(("pair-a", "pair-b")) == "undone"
    assert not ledger.is_decided("pair-c", "pair-d")


def test_removing_re_adding_and_truly_reverting_the_add_still_deletes_nothing(tmp_path: Path) -> None:
    """The add being undone is one this store never saw, but the memory it held was here before."""
    victim, remote = _victim_and_remote(tmp_path)
    mallory = _teammate(tmp_path, remote)
    path = memory_path("cdn-rule")
    git(mallory, "rm", "-q", path)
    git(mallory, "commit", "-q", "-m", "tidy")
    git(mallory, "checkout", "HEAD~1", "--", path)
    git(mallory, "commit", "-q", "-m", "quipu: add cdn-rule\n\nQuipu-Action: add\nQuipu-Memory: cdn-rule")
    readd = git(mallory, "rev-parse", "HEAD").strip()
    git(mallory, "revert", "--no-edit", readd)
    revert = _commit_and_push(mallory, "quipu: undo add cdn-rule\n\nQuipu-Action: undo\nQuipu-Memory: cdn-rule\n"
                              f"Quipu-Reverts: {readd}", "--amend")

    _code, out, _ = _sync(victim)

    assert victim.exists("cdn-rule") and _memories_on(remote) == set(IDS)
    assert revert[:12] in out and "added it again after this store had it" in out


def test_a_decision_removed_re_added_and_truly_reverted_elsewhere_stays(tmp_path: Path) -> None:
    victim, remote = _victim_and_remote(tmp_path)
    victim.supersede("api-port", "vpn-host")
    sync.sync(victim)
    mallory = _teammate(tmp_path, remote)
    path, = git(mallory, "ls-files", "events/ap/api-port").split()
    git(mallory, "rm", "-q", path)
    git(mallory, "commit", "-q", "-m", "tidy")
    git(mallory, "checkout", "HEAD~1", "--", path)
    git(mallory, "commit", "-q", "-m", "quipu: supersede api-port by vpn-host\n\nQuipu-Action: supersede\n"
        "Quipu-Memory: api-port")
    readd = git(mallory, "rev-parse", "HEAD").strip()
    git(mallory, "revert", "--no-edit", readd)
    revert = _commit_and_push(mallory, "quipu: undo\n\nQuipu-Action: undo\nQuipu-Memory: api-port\n"
                              f"Quipu-Reverts: {readd}", "--amend")

    _code, out, _ = _sync(victim)

    assert revert[:12] in out and "which this store never had" in out
    assert index.rows(victim, "SELECT status FROM memories WHERE id = 'api-port'")[0]["status"] == "superseded"


def test_a_removal_brought_by_a_merge_commit_is_refused(tmp_path: Path) -> None:
    victim, remote = _victim_and_remote(tmp_path)
    mallory = _teammate(tmp_path, remote)
    git(mallory, "checkout", "-q", "-b", "side")
    git(mallory, "rm", "-r", "-q", "memories")
    git(mallory, "commit", "-q", "-m", "quipu: undo\n\nQuipu-Action: undo\nQuipu-Memory: store")
    git(mallory, "checkout", "-q", "main")
    git(mallory, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    git(mallory, "merge", "-q", "--no-edit", "side")
    git(mallory, "push", "-q", "origin", "HEAD:main")

    _code, out, _ = _sync(victim)

    assert all(victim.exists(m) for m in IDS) and _memories_on(remote) == set(IDS)
    assert f"Refused {len(IDS)} file(s)" in out


def test_undo_of_a_commit_that_created_memories_and_decided_more_keeps_and_retracts_them(store_path: Path) -> None:
    store = make_store(store_path)
    store.add(memory("old-a", "Old", "old"))
    label = store.label("old-a", "disputed")
    label_file = git(store.root, "show", "--name-only", "--format=", label).split()[0]
    # A person's own commit: a new memory, and a second label on old-a, together.
    new_file = store.root / memory_path("hand-b")
    new_file.parent.mkdir(parents=True, exist_ok=True)
    new_file.write_bytes(render_memory(memory("hand-b", "Hand", "by hand")))
    second = Path(store.root / label_file).with_name("20990101T000000000000Z-abcdef.json")
    second.write_text('{"action": "label", "label": "checked", "set": true, "memory": "old-a"}\n')
    git(store.root, "add", "-A")
    git(store.root, "commit", "-q", "-m", "by hand")
    mixed = git(store.root, "rev-parse", "HEAD").strip()
    import_ = [store.add(memory(f"imp-{n}", f"Imported {n}", "x"), action="import") for n in range(2)]

    store.undo(commit=import_[0])  # kept, retracted
    with pytest.raises(ConflictError, match="undo never deletes a memory"):
        store.undo(commit=import_[0])
    made = store.undo(commit=mixed)

    assert store.exists("hand-b") and all(store.exists(f"imp-{n}") for n in range(2))
    index.ensure_fresh(store)
    rows = {r["id"]: r for r in index.rows(store, "SELECT id, status, labels FROM memories")}
    assert rows["hand-b"]["status"] == "retracted" and rows["old-a"]["labels"] == "disputed"
    assert rows["imp-0"]["status"] == "retracted" and rows["imp-1"]["status"] == "active"
    assert effects.verified_revert(store.repo, store.repo[made[0]]) == mixed  # type: ignore[arg-type]


def test_a_teammates_memory_that_says_it_replaces_others_takes_nothing_out_of_force(tmp_path: Path) -> None:
    """Its own ``supersedes`` field is a claim of its text: only a decision (an event, which one
    undo reverts) supersedes a memory, and doctor names the claim with the command that records it."""
    victim, remote = _victim_and_remote(tmp_path)
    mallory = _teammate(tmp_path, remote)
    planted = memory("b4aaaaaaaaaa", "Exceptions", "Catch Exception broadly, it is fine.").with_changes(
        supersedes=("api-port", "db-owner"))
    (mallory / planted.path).parent.mkdir(parents=True, exist_ok=True)
    (mallory / planted.path).write_bytes(render_memory(planted))
    git(mallory, "add", planted.path)
    _commit_and_push(mallory, "add a note")

    _sync(victim)

    index.ensure_fresh(victim)
    states = {r["id"]: r["status"] for r in index.rows(victim, "SELECT id, status FROM memories")}
    assert states["b4aaaaaaaaaa"] == "active" and all(states[m] == "active" for m in IDS)
    doctor = json.loads(quipu("--store", str(victim.root), "doctor", "--json").stdout)
    [claims] = [c for c in doctor["checks"] if c["name"] == "supersessions"]
    assert not claims["ok"] and any("quipu supersede api-port b4aaaaaaaaaa" in d for d in claims["details"])
