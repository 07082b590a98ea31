"""quipu.store.gitindex rewrites git's index byte for byte as git reads it: git itself is the judge."""
from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pygit2
import pytest

from quipu.store.gitindex import IndexFile, Unsupported
from testing.fixtures import git


def _repo(root: Path, version: int) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    files = {
        "README.md": "hello\n",
        "memories/ab/abc-one.md": "one\n",
        "memories/ab/abd-two.md": "two\n",
        "memories/ac/ac-three.md": "three\n",
        "memories/zz/" + "long-" * 30 + "name.md": "long\n",
        "events/ab/abc-one/2026.json": "{}\n",
        "tools/run.sh": "#!/bin/sh\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "tools/run.sh").chmod(0o755)
    os.symlink("README.md", root / "link-to-readme")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    if version == 3:
        (root / "later.md").write_text("intent\n")
        git(root, "add", "-N", "later.md")  # intent-to-add: an extended flag, so git writes version 3
    git(root, "update-index", "--index-version", str(version))
    return root


def _git_view(root: Path) -> tuple[str, str, str]:
    """What git reads from the index: every entry with its stat data, and the status."""
    return (git(root, "ls-files", "--stage", "--debug"), git(root, "status", "--porcelain"),
            git(root, "diff", "--cached", "--name-status"))


def _index(root: Path) -> Path:
    return root / ".git" / "index"


@pytest.mark.parametrize("version", [2, 3, 4])
def test_an_index_read_and_written_again_is_the_same_index_to_git(tmp_path: Path, version: int) -> None:
    root = _repo(tmp_path / "r", version)
    before = _git_view(root)
    data = _index(root).read_bytes()
    parsed = IndexFile.parse(data)
    assert parsed.version == version and b"tools/run.sh" in parsed.paths
    _index(root).write_bytes(parsed.serialize())
    assert _git_view(root) == before
    assert _index(root).read_bytes()[4:8] == version.to_bytes(4, "big")


@pytest.mark.parametrize("version", [2, 4])
def test_spliced_entries_are_what_git_add_and_git_rm_would_stage(tmp_path: Path, version: int) -> None:
    """Random adds, edits and removals, staged by splicing; after each round git sees a clean tree."""
    root = _repo(tmp_path / "r", version)
    repo = pygit2.Repository(str(root))
    rng = random.Random(version)
    index = IndexFile.parse(_index(root).read_bytes())
    names = [f"memories/{a}{b}/{a}{b}{c}-note.md" for a in "abz" for b in "abc" for c in "xyz"]
    for round_no in range(12):
        for rel in rng.sample(names, 4):
            path = root / rel
            if path.exists() and rng.random() < 0.4:
                path.unlink()
                index.remove(rel)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"round {round_no} {rel}\n")
            oid = repo.create_blob_fromworkdir(rel)
            index.set(rel, oid.raw, 0o100644, os.lstat(path))
        _index(root).write_bytes(index.serialize())
        git(root, "commit", "-q", "-m", f"round {round_no}", "--allow-empty")
        assert git(root, "status", "--porcelain", "--untracked-files=all") == "", round_no
        assert git(root, "ls-files") == git(root, "ls-tree", "-r", "--name-only", "HEAD")
        # git's own reading of the entry stat data matches the files (no entry needs a refresh)
        assert git(root, "diff-files", "--name-only") == ""
    assert _index(root).read_bytes()[4:8] == version.to_bytes(4, "big")
    assert subprocess.run(["git", "-C", str(root), "fsck", "--no-progress"], capture_output=True).returncode == 0


@pytest.mark.parametrize("version", [2, 4])
def test_indexes_it_must_not_rewrite_are_refused(tmp_path: Path, version: int) -> None:
    root = _repo(tmp_path / "r", version)
    data = _index(root).read_bytes()
    for cut in (10, len(data) // 2, len(data) - 21):  # a file cut short anywhere
        with pytest.raises(Unsupported):
            IndexFile.parse(data[:cut] + data[-20:])
    # The trailing checksum is read as git reads it: not checked (only `git fsck` checks it).
    staged = git(root, "ls-files", "--stage")
    flipped = data[:-1] + bytes([data[-1] ^ 0xFF])
    assert IndexFile.parse(flipped).paths == IndexFile.parse(data).paths
    _index(root).write_bytes(flipped)
    assert git(root, "ls-files", "--stage") == staged
    _index(root).write_bytes(data)
    if version == 4:
        return  # the rest needs nothing of version 4

    git(root, "update-index", "--split-index")
    with pytest.raises(Unsupported, match="link"):
        IndexFile.parse(_index(root).read_bytes())
    git(root, "update-index", "--no-split-index")

    git(root, "switch", "-q", "-c", "other")
    (root / "README.md").write_text("theirs\n")
    git(root, "commit", "-qam", "theirs")
    git(root, "switch", "-q", "main")
    (root / "README.md").write_text("ours\n")
    git(root, "commit", "-qam", "ours")
    subprocess.run(["git", "-C", str(root), "merge", "-q", "other"], capture_output=True)
    with pytest.raises(Unsupported, match="unmerged"):
        IndexFile.parse(_index(root).read_bytes())


@pytest.mark.parametrize("version", [2, 4])
def test_many_entries_set_at_once_are_the_index_setting_each_makes(tmp_path: Path, version: int) -> None:
    """A bulk write's files merged into the entries at once: the same bytes as one ``set`` each
    (new paths among the old ones, and old paths staged again), and git sees a clean tree."""
    root = _repo(tmp_path / "r", version)
    repo = pygit2.Repository(str(root))
    names = [f"memories/{n % 7}{n % 3}/note-{n:04d}.md" for n in range(300)] + ["memories/ab/abc-one.md", "README.md"]
    items = []
    for n, rel in enumerate(names):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"note {n}\n")
        items.append((rel, repo.create_blob_fromworkdir(rel).raw, 0o100644, os.lstat(path)))
    one_by_one = IndexFile.parse(_index(root).read_bytes())
    parts = [one_by_one.set(*item) for item in items]
    at_once = IndexFile.parse(_index(root).read_bytes())
    assert at_once.set_many(items) == parts
    assert at_once.serialize() == one_by_one.serialize()
    _index(root).write_bytes(at_once.serialize())
    git(root, "commit", "-q", "-m", "many")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(root, "diff-files", "--name-only") == ""


def test_an_entry_this_write_staged_is_not_hashed_again_and_an_older_one_is(tmp_path: Path) -> None:
    """Racily clean entries (as new as the index replaced) whose file changed are smudged, as git
    does before it writes an index; one staged by this very write from the bytes it wrote is up
    to date, as git's ``CE_UPTODATE``, and left as staged."""
    root = _repo(tmp_path / "r", 2)
    for rel in ("memories/ab/abc-one.md", "memories/ab/abd-two.md"):  # same size, same stat data
        before = os.stat(root / rel)
        (root / rel).write_text((root / rel).read_text().upper())
        os.utime(root / rel, ns=(before.st_atime_ns, before.st_mtime_ns))
    staged = IndexFile.parse(_index(root).read_bytes())
    changed = staged.smudge_racy(0, str(root), uptodate=["memories/ab/abd-two.md"])
    assert [rel for rel, _fixed in changed] == ["memories/ab/abc-one.md"]
    _index(root).write_bytes(staged.serialize())
    later = os.stat(_index(root)).st_mtime_ns + 5_000_000_000  # an index a tick newer: nothing racy to git
    os.utime(_index(root), ns=(later, later))
    # (the edits changed the ctime, which git would look at otherwise)
    assert git(root, "-c", "core.trustctime=false", "diff", "--name-only") == "memories/ab/abc-one.md\n"
