"""Benchmark of `quipu log --limit 0`: the whole store's audit log, every commit described by what
it did, read from its trees (``quipu.sync.described.walk``), against `git log` of the same commits.

The store: ``Store.init``, then ``--commits`` (default 13,000) commits made one by one through the
library as quipu's commands make them, from the real developer notes of
``../shared/data/memories-real`` (``testing.realistic``): each note added as a memory under an id
like quipu's own (random-looking hex, so memories spread over the 256 shard folders), and copies
of notes once they are all in; text edits, labels set and taken off, retractions,
supersessions, ``quipu undo`` of a label, and now and then a commit made with plain git: a hand
edit, a `git revert`, a text edit under a false ``Quipu-Action`` and a `--no-ff` merge of a side
branch. quipu's writes start git's automatic packing as they go (``quipu.store.packing``), so the
store is packed as a user's would be. Ops are drawn with a fixed seed, so every build makes the
same history. With ``--keep DIR`` the store is built once into DIR and reused by later runs (a
store is reused only when its build finished).

Per round, in the same run and alternating which goes first: `git log --format=%H%n%B` (the
baseline, every commit's id and message), `quipu log --limit 0` and `quipu log --limit 0 --json`,
each a fresh process (the venv's interpreter, ``-m quipu``) with its output written to a file.
Each quipu command runs twice: with nothing kept (the records a former log kept in the store's
cache folder, ``quipu.sync.described_cache``, removed first: every commit's trees read) and with
the records kept (a log ran before). Reported: the median wall seconds of each and its ratio to
git log's median.

With ``--compare SRC`` the two quipu commands are also timed with the ``quipu`` package of the
source tree SRC (``PYTHONPATH``), in the same rounds: a before-and-after of one change.

Usage: python bench/bench_log.py [--keep DIR] [--commits 13000] [--rounds 5] [--compare SRC] [--write-results]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
from quipu.errors import FatalError  # noqa: E402
from quipu.store.memory import Memory, memory_path  # noqa: E402
from quipu.store.store import Store  # noqa: E402
from quipu.sync import described_cache  # noqa: E402
from testing import realistic  # noqa: E402
from testing.fixtures import git, hand_commit  # noqa: E402

LABELS = ("reviewed", "important", "stale", "needs-check", "team", "ops", "frontend", "backend")
DONE = "bench-log-built"  # written beside the store once its build finished: its commit count


def _pool(count: int) -> list[Memory]:
    """The memories to add: every real note, then copies of them, each under an id like those
    ``memory.new_id`` makes (12 hex digits, spread over 256 shard folders), drawn from the note."""
    data = realistic.data_dir()
    if data is None:
        raise SystemExit(f"bench: {realistic.MISSING_DATA}")
    real = realistic.realistic_memories(realistic.real_notes(data))
    out: list[Memory] = []
    copy = 0
    while len(out) < count:
        out += [m.with_changes(id=hashlib.sha1(f"{m.id} {copy}".encode()).hexdigest()[:12],
                               title=f"{m.title} ({copy})" if copy else m.title) for m in real]
        copy += 1
    return out[:count]


def _commits(store: Store) -> int:
    return int(git(store.root, "rev-list", "--count", "HEAD").strip())


def build(path: Path, commits: int, seed: int = 11) -> Store:
    """A store of about ``commits`` commits (see the module docstring)."""
    store, _ = Store.init(path)
    rng = random.Random(seed)
    pool = _pool(commits)
    added: list[Memory] = []
    labelled: list[tuple[str, str, str]] = []  # (memory, label, commit) of labels set
    retracted: set[str] = set()
    start = time.perf_counter()
    made, taken = 1, 0
    # (op, weight): adds lead, decisions follow what is there, plain git is rare.
    ops = [("add", 30), ("edit", 9), ("label", 34), ("unlabel", 6), ("retract", 6), ("supersede", 6),
           ("undo", 1.2), ("hand", 0.5), ("forged", 0.3), ("revert", 0.3), ("merge", 0.1)]
    names, weights = zip(*ops, strict=True)
    while made < commits:
        op = "add" if len(added) < 50 else rng.choices(names, weights)[0]
        live = [m for m in added[-400:] if m.id not in retracted] or added
        if op == "add":
            m = pool[taken % len(pool)]
            taken += 1
            try:
                store.add(m)
            except FatalError:  # a note that looks like it holds a secret (quipu refuses it) or added already
                continue
            added.append(m)
        elif op == "edit":
            m = rng.choice(live)
            store.add(m.with_changes(body=m.body.rstrip("\n") + f"\n\nEdited, revision {made}.\n"),
                      action="edit", overwrite=True)
        elif op == "label":
            m, label = rng.choice(live), rng.choice(LABELS)
            labelled.append((m.id, label, store.label(m.id, label)))
        elif op == "unlabel":
            memory_id, label, _sha = rng.choice(labelled[-200:] or [(rng.choice(live).id, "stale", "")])
            store.label(memory_id, label, on=False)
        elif op == "retract":
            m = rng.choice(live)
            store.retract(m.id, reason="no longer true")
            retracted.add(m.id)
        elif op == "supersede":
            old, new = rng.sample(live, 2)
            store.supersede(old.id, new.id, reason="newer")
        elif op == "undo" and labelled:
            try:
                store.undo(commit=labelled.pop()[2])
            except FatalError:  # its label was taken off since: quipu refuses, as it should
                continue
        elif op == "hand":
            m = rng.choice(live)
            text = (store.root / memory_path(m.id)).read_text(encoding="utf-8")
            hand_commit(store.root, "fix a typo", {memory_path(m.id): (text + "\nA hand edit.\n").encode()})
        elif op == "forged":
            m, other = rng.sample(live, 2)
            text = (store.root / memory_path(m.id)).read_text(encoding="utf-8")
            hand_commit(store.root, f"quipu: retract {other.id}\n\nQuipu-Memory: {other.id}\nQuipu-Action: retract\n",
                        {memory_path(m.id): (text + "\nForged.\n").encode()}, author="Mallory <mallory@example.com>")
        elif op == "revert" and labelled:
            reverted = subprocess.run(["git", "-C", str(store.root), "revert", "--no-edit", labelled.pop()[2]],
                                      capture_output=True)
            if reverted.returncode != 0:
                git(store.root, "revert", "--abort", check=False)
                continue
        elif op == "merge":
            m = rng.choice(live)
            text = (store.root / memory_path(m.id)).read_text(encoding="utf-8")
            git(store.root, "checkout", "-q", "-b", "side")
            hand_commit(store.root, "side edit", {memory_path(m.id): (text + "\nFrom a side branch.\n").encode()})
            git(store.root, "checkout", "-q", "main")
            git(store.root, "merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side")
            git(store.root, "branch", "-q", "-D", "side")
            made += 1
        else:
            continue
        made += 1
        if made % 1000 == 0:
            print(f"bench: {made} commits, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    made = _commits(store)
    (path.parent / DONE).write_text(f"{made}\n")
    print(f"bench: built {made} commits in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", metavar="DIR", help="build the store in DIR once and reuse it")
    parser.add_argument("--commits", type=int, default=13000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", metavar="SRC", help="also time the log with the quipu package of the "
                        "source tree SRC (a checkout of another commit), in the same rounds")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    scratch = C.scratch_dir(args.keep, "log")
    env = C.isolate(scratch)
    path = scratch / "store"
    try:
        if (scratch / DONE).is_file() and path.is_dir():
            store = Store(path)
            print(f"bench: reusing {path} ({_commits(store)} commits)", file=sys.stderr)
        else:
            if path.exists():
                raise SystemExit(f"bench: {path} holds an unfinished build: remove it first")
            store = build(path, args.commits)
        C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
        count = _commits(store)
        python = os.path.abspath(sys.executable)  # the venv's own, not the interpreter it links to
        git_exe = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
        quipu_log = [python, "-m", "quipu", "--store", str(path), "log", "--limit", "0"]
        kept = path / ".cache" / described_cache.NAME
        # name: (argv, environment, the kept records: None as they are, False removed, True made first)
        runs: dict[str, tuple[list[str], dict[str, str], bool | None]] = {
            "git log --format=%H%n%B": ([git_exe, "-C", str(path), "log", "--format=%H%n%B"], env, None),
            "quipu log --limit 0 (nothing kept)": (quipu_log, env, False),
            "quipu log --limit 0 --json (nothing kept)": ([*quipu_log, "--json"], env, False),
            "quipu log --limit 0 (records kept)": (quipu_log, env, True),
            "quipu log --limit 0 --json (records kept)": ([*quipu_log, "--json"], env, True),
        }
        if args.compare:  # the same commands with the quipu package of another source tree
            other = {**env, "PYTHONPATH": str(Path(args.compare).absolute())}
            subprocess.run([python, "-m", "compileall", "-q", str(Path(args.compare) / "quipu")], check=True,
                           stdout=subprocess.DEVNULL)
            runs[f"quipu log --limit 0 ({args.compare})"] = (quipu_log, other, None)
            runs[f"quipu log --limit 0 --json ({args.compare})"] = ([*quipu_log, "--json"], other, None)
        times: dict[str, list[float]] = {name: [] for name in runs}
        out = scratch / "out"
        out.mkdir(exist_ok=True)
        for r in range(args.rounds):
            order = list(runs) if r % 2 == 0 else list(reversed(runs))
            for i, name in enumerate(order):
                argv, run_env, records = runs[name]
                if records is False:
                    kept.unlink(missing_ok=True)
                elif records and not kept.is_file():
                    subprocess.run(quipu_log, env=env, cwd=scratch, check=True, stdout=subprocess.DEVNULL)
                wall, _rss, code = C.spawn_timed(argv, stdout=str(out / f"run-{i}.txt"), env=run_env, cwd=str(scratch))
                if code != 0:
                    raise SystemExit(f"bench: {name} exited {code}")
                times[name].append(wall)
        base = C.median(times["git log --format=%H%n%B"])
        lines = [f"Store: {count} commits ({path}); median of {args.rounds} rounds, fresh processes.", "",
                 C.table(["command", "median s", "vs git log"],
                         [[name, f"{C.median(t):.3f}", f"{C.median(t) / base:.2f}x"] for name, t in times.items()])]
        print("\n".join(lines))
        if args.write_results:
            C.update_results("bench_log", "The whole store's audit log: bench/bench_log.py", "\n".join(lines),
                             command=C.command_line(), machine_line=C.machine())
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
