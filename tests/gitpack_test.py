"""quipu.store.gitpack reads what git reads from its packs: every object of real repacked
repositories (offset and reference deltas, deltas on deltas), checked against `git cat-file`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from quipu.store import gitobj, gitpack
from quipu.store.store import Store
from testing.fixtures import add_all, git, make_store, memory


def _objects(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every object of the repository as git reads it: {id: (kind, content)}."""
    listed = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split()
    out = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input="\n".join(listed).encode() + b"\n",
                         capture_output=True, check=True).stdout
    found: dict[str, tuple[str, bytes]] = {}
    pos = 0
    while pos < len(out):
        header_end = out.index(b"\n", pos)
        oid, kind, size = out[pos:header_end].decode().split()
        found[oid] = (kind, out[header_end + 1:header_end + 1 + int(size)])
        pos = header_end + 1 + int(size) + 1
    return found


def _store_with_history(tmp_path: Path) -> Store:
    store = make_store(tmp_path / "s")
    text = "\n".join(f"Line {n} of the runbook: restart the worker {n % 7} after the deploy." for n in range(200))
    for n in range(12):  # versions of one long file and many small ones: material for deltas
        add_all(store, [memory(f"aaaa{n:08d}", f"Runbook {n}", text + f"\nRevision {n}.\n" * (n + 1))])
    return store


@pytest.mark.parametrize("offsets", ["true", "false"])
def test_every_packed_object_reads_as_git_reads_it(tmp_path: Path, offsets: str) -> None:
    store = _store_with_history(tmp_path)
    git(store.root, "-c", f"repack.useDeltaBaseOffset={offsets}", "repack", "-a", "-d", "-f", "--depth=50",
        "--window=50")
    git(store.root, "prune-packed")
    expected = _objects(store.root)
    deltified = git(store.root, "cat-file", "--batch-all-objects", "--batch-check=%(deltabase)").split()
    assert sum(base != "0" * 40 for base in deltified) > 5  # the test reads deltas, not only whole objects
    packs = gitpack.Packs(os.path.join(store.gitdir, "objects"), lambda oid: None)
    for oid, (kind, data) in expected.items():
        assert packs.read(oid) == (kind, data), oid
    assert packs.read("0" * 40) is None
    assert gitobj.Objects(store.gitdir).read(next(iter(expected))) == next(iter(expected.values()))


def test_a_damaged_pack_is_left_to_git(tmp_path: Path) -> None:
    store = _store_with_history(tmp_path)
    git(store.root, "repack", "-a", "-d", "-f")
    git(store.root, "prune-packed")
    expected = _objects(store.root)
    pack = next((Path(store.gitdir) / "objects" / "pack").glob("*.pack"))
    data = bytearray(pack.read_bytes())
    for at in range(200, len(data) - 40, 97):  # bytes inside the objects changed, none of the index
        data[at] ^= 0x55
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    packs = gitpack.Packs(os.path.join(store.gitdir, "objects"), lambda oid: None)
    read = {oid: packs.read(oid) for oid in expected}
    assert all(got in (None, expected[oid]) for oid, got in read.items())  # never another object than the one asked for
    assert None in read.values()  # the damage was seen


def test_a_fresh_add_to_a_packed_store_starts_no_git(tmp_path: Path) -> None:
    store = _store_with_history(tmp_path)
    git(store.root, "gc", "--quiet")
    assert not [p for p in (Path(store.gitdir) / "objects").iterdir() if len(p.name) == 2]
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "quipu", "--store", str(store.root), "add", "-t", "Pager rota",
         "The pager rota changes every Monday at 09:00.", "--json"], capture_output=True, text=True, timeout=60)
    assert traced.returncode == 0, traced.stderr
    imported = {line.split("|")[-1].strip() for line in traced.stderr.splitlines() if line.startswith("import time:")}
    assert "quipu.store.gitpack" in imported and "subprocess" not in imported  # no `git cat-file` was started
    assert git(store.root, "status", "--porcelain") == ""
    assert git(store.root, "fsck", "--strict", "--no-dangling", check=False) == ""


def test_a_reader_that_listed_the_packs_finds_what_a_later_repack_packed(tmp_path: Path) -> None:
    store = _store_with_history(tmp_path)
    git(store.root, "repack", "-a", "-d")
    packs = gitpack.Packs(os.path.join(store.gitdir, "objects"), lambda oid: None)
    assert packs.read(git(store.root, "rev-parse", "HEAD~11").strip()) is not None  # the folder is listed
    store.add(memory("bbbb00000001", "Pager rota", "The pager rota changes every Monday."))
    head = git(store.root, "rev-parse", "HEAD").strip()
    assert packs.read(head) is None  # loose: in no pack
    git(store.root, "repack", "-a", "-d")
    git(store.root, "prune-packed")
    assert packs.read(head) == _objects(store.root)[head]


def test_an_object_that_inflates_past_its_header_size_is_refused_without_inflating_it_all() -> None:
    import tracemalloc
    import zlib

    from quipu.store.gitpack import _inflate

    stream = zlib.compress(b"a" * 50_000_000, 9) + b"\0" * 64  # 50 MB in about 50 KB, claiming 100 bytes
    tracemalloc.start()
    try:
        with pytest.raises(zlib.error):
            _inflate(stream, 0, 100)  # type: ignore[arg-type]  # a mapping or bytes alike
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000  # it stopped past 100 bytes instead of inflating 50 MB
    assert _inflate(zlib.compress(b"") + b"\0" * 64, 0, 0) == b""  # type: ignore[arg-type]
    assert _inflate(zlib.compress(b"tree") + b"\0" * 64, 0, 4) == b"tree"  # type: ignore[arg-type]
