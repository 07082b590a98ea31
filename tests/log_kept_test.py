"""The whole store's log reads each commit's trees once: two trees are compared by the span of
their objects that differs (``quipu.sync.treediff``), and what each commit did is kept in the
store's cache folder between runs (``quipu.sync.described_cache``). Neither changes what the log
says: the span gives the same changes as comparing every entry of both trees, even for trees no
git would write (bytes that are no entry, an entry twice, names out of order), and the log is the
same with records kept, with none, and with a damaged, stale or forged file of records."""
from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from quipu.store.memory import memory_path
from quipu.store.store import Store
from quipu.sync import described, described_cache, treediff
from testing.fixtures import git, hand_commit, make_store, memory, quipu

_ENTRY = re.compile(rb"[0-7]+ [^\0]*\0.{20}", re.S)
_PARTS = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.S)


def every_entry(repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None, prefix: str = "",
                out: dict[str, object] | None = None) -> dict[str, object]:
    """The changes between two trees with every entry of both compared, as the log read them before."""
    out = {} if out is None else out
    if old == new:
        return out
    a, b = (frozenset(_ENTRY.findall(repo.odb.read(t)[1])) if t is not None else frozenset() for t in (old, new))
    before, after = ({name: (mode, oid) for mode, name, oid in _PARTS.findall(b"".join(side))} for side in (a - b, b - a))
    for name in sorted(before.keys() | after.keys()):
        x, y = before.get(name), after.get(name)
        path = prefix + name.decode("utf-8", "replace")
        sub = [pygit2.Oid(raw=e[1]) if e is not None and e[0] == b"40000" else None for e in (x, y)]
        if sub[0] is not None or sub[1] is not None:
            every_entry(repo, sub[0], sub[1], path + "/", out)
        files = [(e[1].hex(), int(e[0], 8)) if e is not None and e[0] != b"40000" else None for e in (x, y)]
        if files[0] is not None or files[1] is not None:
            out[path] = (files[0], files[1])
    return out


def _outcome(read: Callable[..., object], *args: object) -> object:
    try:
        return read(*args)
    except KeyError:  # a subtree's id that names no object: both ways open it
        return "no such tree"


def _entry(mode: bytes, name: bytes, oid: bytes) -> bytes:
    return mode + b" " + name + b"\0" + oid


def test_the_span_that_differs_gives_the_changes_of_every_entry(tmp_path: Path) -> None:
    """Generated pairs of tree objects, large and small, from an edit of one entry to anything a
    hand-made object can hold: both ways of reading them give the same changes."""
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    rng = random.Random(5)
    leaves = [repo.odb.write(pygit2.enums.ObjectType.TREE, _entry(b"100644", b"f%d" % i, rng.randbytes(20)))
              for i in range(4)]
    names = [b"%02x" % i for i in range(256)] + [b"10 x", b"a\0b"[:1], b"100644 y", b"\xff\xfe", b"z" * 300]

    def some_entry(taken: set[bytes]) -> bytes:
        """An entry whose name no other entry of its tree has: of two entries of one name, which
        one counts was never decided (git writes no such tree)."""
        name = rng.choice([n for n in names if n not in taken] or [b"spare%d" % rng.randrange(10**9)])
        taken.add(name)
        if rng.random() < 0.2:
            return _entry(b"40000", name, rng.choice(leaves).raw)
        oid = bytes(rng.choice((0, 32, 48, 52)) if rng.random() < 0.3 else rng.randrange(256) for _ in range(20))
        return _entry(rng.choice((b"100644", b"100755", b"120000", b"644")), name, oid)

    checked = 0
    for case in range(3000):
        taken: set[bytes] = set()
        base = sorted(some_entry(taken) for _ in range(rng.choice((3, 40, 200))))
        other = list(base)
        for _ in range(rng.choice((1, 1, 1, 2, 5))):
            what = rng.randrange(7)
            at = min(rng.randrange(len(other) + 1), len(other) - 1)
            if what == 0:  # an entry replaced by one of another name
                other[at] = some_entry(taken)
            elif what == 1:
                other.insert(at, some_entry(taken))
            elif what == 2 and len(other) > 1:
                del other[at]
            elif what == 3:
                other.insert(at, rng.choice(other))  # an entry twice
            elif what == 4:
                other.insert(at, rng.randbytes(rng.randrange(1, 30)))  # bytes that are no entry
            elif what == 5:
                rng.shuffle(other)
            else:  # one byte of an entry's id changed
                other[at] = other[at][:-1] + bytes([other[at][-1] ^ 1])
        sides = [b"".join(base), b"".join(other)]
        if case % 2:
            sides.reverse()
        old, new = (repo.odb.write(pygit2.enums.ObjectType.TREE, side) for side in sides)
        if old == new:
            continue
        assert _outcome(described.tree_changes, described.Trees(repo), old, new) == \
            _outcome(every_entry, repo, old, new), case
        checked += 1
    assert checked > 2500


def _history(tmp_path: Path) -> Store:
    """A store whose history holds quipu's own commits, a verified undo, a `git revert`, a hand
    edit, an event file that is not JSON and a text edit under a false `Quipu-Action`."""
    store = make_store(tmp_path / "store")
    store.add(memory("api-port", "API port", "The API listens on port 8080"))
    store.add(memory("db-owner", "DB owner", "Maria owns the database"))
    store.retract("db-owner")
    store.undo(commit=store.label("api-port", "reviewed"))
    git(store.root, "revert", "--no-edit", store.label("api-port", "team"))
    store.supersede("db-owner", "api-port", sweep="sw-1")
    text = (store.root / memory_path("api-port")).read_text()
    hand_commit(store.root, "quipu: retract db-owner\n\nQuipu-Memory: db-owner\nQuipu-Action: retract\n",
                {memory_path("api-port"): text.replace("8080", "9090").encode()})
    hand_commit(store.root, "an event by hand", {"events/ap/api-port/x.json": b"{not json"})
    for i in range(8):
        store.label("api-port", f"l{i}")
    return store


def _logs(store: Store) -> tuple[str, str]:
    out = []
    for extra in ((), ("--json",)):
        proc = quipu("--store", str(store.root), "log", "--limit", "0", *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out.append(proc.stdout)
    return out[0], out[1]


def _write(path: Path, records: object, stamp: str | None = None) -> None:
    body = json.dumps(records).encode()
    header = {"format": described_cache.FORMAT, "stamp": stamp, "body": hashlib.sha256(body).hexdigest()}
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)


def test_the_log_is_the_same_with_records_kept_none_or_a_bad_file(tmp_path: Path) -> None:
    store = _history(tmp_path)
    kept = store.cache_dir / described_cache.NAME
    fresh = _logs(store)
    assert "claims retract of db-owner; changed the text of api-port (not verified)" in fresh[0]
    assert fresh[0].count("undid commit") == 2 and "recorded a decision (unreadable)" in fresh[0]
    assert kept.is_file()
    stamp = json.loads(kept.read_bytes().partition(b"\n")[0])["stamp"]
    records = json.loads(kept.read_bytes().partition(b"\n")[2])
    assert len(records) == int(git(store.root, "rev-list", "--count", "HEAD")) - 1  # not the unreadable event's
    assert _logs(store) == fresh  # from the records

    good = kept.read_bytes()
    wrong_types = {sha: [[[["add"], 1, None, "", "no"]], 7, None] for sha in records}
    for damage in (good[: len(good) // 2], b"", b"\0" * 64, good.replace(b'"add"', b'"edit"'),
                   json.dumps({"format": 99}).encode() + b"\n" + good.partition(b"\n")[2]):
        kept.write_bytes(damage)
        assert _logs(store) == fresh
        assert kept.read_bytes() == good  # replaced by what the log read again
    for stale in ({sha: [[], None, ""] for sha in records}, wrong_types):
        _write(kept, stale, stamp="not this code's")  # records of other code are not read
        assert _logs(store) == fresh
    _write(kept, wrong_types, stamp=stamp)  # each record that is not one the log writes is read again
    assert _logs(store) == fresh
    kept.unlink()
    kept.mkdir()  # a folder where the file would be: the log goes on without it
    assert _logs(store) == fresh


def test_a_short_log_reads_and_keeps_no_records_and_a_shallow_clone_none(tmp_path: Path) -> None:
    store = _history(tmp_path)
    proc = quipu("--store", str(store.root), "log", "--limit", str(described.KEPT_AFTER))
    assert proc.returncode == 0 and not (store.cache_dir / described_cache.NAME).exists()
    kept = described_cache.Kept(tmp_path, shallow=True)
    kept.put("a" * 40, ((), None, ""))
    kept.save()
    assert kept.get("a" * 40) is None and not (tmp_path / described_cache.NAME).exists()


@pytest.mark.parametrize("size", [3, 300])
def test_trees_keep_what_they_read(tmp_path: Path, size: int) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    trees = treediff.Trees(repo)
    raw = b"".join(_entry(b"100644", b"n%04d" % i, bytes(20)) for i in range(size))
    oid = repo.odb.write(pygit2.enums.ObjectType.TREE, raw)
    assert trees.raw(oid) is trees.raw(oid) and trees.raw(None) == b""
    assert trees.entries(oid) == frozenset(_ENTRY.findall(raw))
