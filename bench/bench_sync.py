"""Benchmark of `quipu sync`: 1,000 new memories (1,000 commits) from one clone to another.

Per round, two identical copies of the receiving clone get the same 1,000 commits from the same
bare remote: one with `quipu sync` (the real CLI: fetch, policy checks of every incoming file,
merge, push, index refresh), one with `git pull --no-rebase && git push`. Two cases: a
fast-forward (the receiver wrote nothing), and a merge (the receiver wrote one memory of its own).
Rounds alternate which runs first, so both share the machine's noise.

Usage: python bench/bench_sync.py [--rounds 3] [--memories 1000]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
from quipu.sync import sync  # noqa: E402
from testing.fixtures import git, make_store, memory  # noqa: E402


def _timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def one_round(base: Path, count: int, merge: bool, quipu_first: bool) -> tuple[float, float]:
    remote = base / "remote.git"
    git(base, "init", "-q", "--bare", str(remote))
    sender = make_store(base / "sender")
    sync.set_remote(sender, str(remote))
    sync.sync(sender)
    receiver = sync.clone(str(remote), base / "receiver")[0]
    for i in range(count):
        sender.add(memory(f"bench-{i:05d}", f"Benchmark note {i}", f"body of note {i} about topic {i % 37}\n"))
    git(sender.root, "push", "-q", "origin", "main")
    if merge:
        receiver.add(memory("receiver-own", "Receiver's own note", "written on the receiver"))
    # Each side gets its own copy of the remote, so neither meets the other's push.
    shutil.copytree(receiver.root, base / "plain", symlinks=True)
    shutil.copytree(remote, base / "remote-plain.git")
    git(base / "plain", "remote", "set-url", "origin", str(base / "remote-plain.git"))
    quipu_cmd = [sys.executable, "-m", "quipu", "--store", str(receiver.root), "sync", "--quiet"]
    git_cmd = ["sh", "-c", f"git -C {base / 'plain'} pull -q --no-rebase --no-edit origin main && "
                           f"git -C {base / 'plain'} push -q origin main"]
    if quipu_first:
        q = _timed(quipu_cmd)
        g = _timed(git_cmd)
    else:
        g = _timed(git_cmd)
        q = _timed(quipu_cmd)
    return q, g


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    for merge in (False, True):
        qs, gs = [], []
        for r in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                q, g = one_round(Path(tmp), args.memories, merge, quipu_first=r % 2 == 0)
                qs.append(q)
                gs.append(g)
        mq, mg = statistics.median(qs), statistics.median(gs)
        print(f"{'merge' if merge else 'fast-forward':<13} {args.memories} memories: quipu sync {mq:.3f} s, "
              f"git pull && git push {mg:.3f} s, ratio {mq / mg:.2f}x (median of {args.rounds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
