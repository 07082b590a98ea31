"""Benchmark of one `quipu add` against one `git add && git commit` of the same file, on real text.

A store is made by importing ../shared/data/memories-real's notes (read at run time); beside it a
plain git repository holds the same files. Each round, in an order flipped every round (the machine
is shared), the next real note goes (a) into the store through `quipu add -t TITLE -f NOTE` as a
fresh process, as a person runs it (the secret check, the commit, the index brought up to date),
answered by the command server a first command started (quipu/warm/); (a') another note the same
way with the server turned off (`QUIPU_COMMAND_SERVER=off`: the whole command in its own process,
as the first command after 15 idle minutes runs); and (b) into the plain repository as a file
written by the bench and `git add FILE && git commit`, two fresh git processes. A last row is the
bare interpreter (`python -c pass`) in the same rounds: the part of quipu's cost no Python program
avoids. Medians, the ratio first.

Goal: `quipu add` <= 2.5x `git add && git commit`.

Usage: python bench/bench_add.py [--rounds 21] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.store import secrets_scan  # noqa: E402
from quipu.store.store import Store  # noqa: E402
from testing import realistic as R  # noqa: E402

DATA = C.REPO.parent / "shared" / "data"
GOAL_RATIO = 2.5


def _add(argv: list[str], env: dict[str, str]) -> float:
    wall, _rss, code = C.spawn_timed(argv, env=env, cwd=str(C.REPO))
    if code != 0:
        raise SystemExit(f"bench: quipu add failed ({code}): {argv[-3]!r}")
    return wall


def _git(repo: Path, n: int, note: R.Note, env: dict[str, str]) -> float:
    target = repo / "notes" / f"new-{n}.md"
    target.write_text(f"# {note.title}\n\n{note.body}\n", encoding="utf-8")
    one, _rss, _ = C.spawn_timed(["/usr/bin/git", "-C", str(repo), "add", str(target)], env=env)
    two, _rss, _ = C.spawn_timed(["/usr/bin/git", "-C", str(repo), "commit", "-q", "-m", f"add {n}"], env=env)
    return one + two


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=21, help="rounds (default 21)")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder, removed)")
    p.add_argument("--write-results", action="store_true", help="update the bench_add section of bench/RESULTS.md")
    args = p.parse_args(argv)
    machine_line = C.machine()
    scratch = C.scratch_dir(args.keep, "add")
    env = C.isolate(scratch)
    C.compile_quipu()
    try:
        notes = [n for n in R.real_notes(DATA) if n.title.strip() and n.body.strip()
                 and not secrets_scan.find_secrets(f"{n.title}\n{n.body}")]
        folder = scratch / "notes"
        folder.mkdir()
        seed, fresh = notes[:-2 * args.rounds], notes[-2 * args.rounds:]
        for n, note in enumerate(seed):
            (folder / f"note-{n:05d}.md").write_text(f"# {note.title}\n\n{note.body}\n", encoding="utf-8")
        store = scratch / "store"
        Store.init(store)
        quipu = [sys.executable, "-m", "quipu", "--store", str(store)]
        subprocess.run([*quipu, "import", "markdown", str(folder)], check=False, env=env, capture_output=True)
        repo = scratch / "plain-git"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["cp", "-r", str(folder), str(repo / "notes")], check=True)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "notes"], check=True)
        alone_env = {**env, "QUIPU_COMMAND_SERVER": "off"}
        subprocess.run([*quipu, "show", "none"], env=env, capture_output=True)  # starts the command server
        C.wait_for_server(env["QUIPU_HOME"], "command")
        adds, alones, gits, bare = [], [], [], []
        for n in range(args.rounds):
            argvs = []
            for k, note in enumerate(fresh[2 * n:2 * n + 2]):
                source = scratch / f"new-{n}-{k}.md"
                source.write_text(note.body, encoding="utf-8")
                argvs.append([*quipu, "add", "-t", note.title[:120], "-f", str(source)])
            order = ("add", "alone", "git", "bare") if n % 2 == 0 else ("bare", "git", "alone", "add")
            for what in order:
                if what == "add":
                    adds.append(_add(argvs[0], env))
                elif what == "alone":
                    alones.append(_add(argvs[1], alone_env))
                elif what == "git":
                    gits.append(_git(repo, n, fresh[2 * n], env))
                else:
                    bare.append(C.spawn_timed([sys.executable, "-c", "pass"], env=env)[0])
        a, al, g, b = C.median(adds), C.median(alones), C.median(gits), C.median(bare)
        body = (
            f"One real note (memories-real) per round into a store of {len(seed):,} imported notes; medians of "
            f"{args.rounds} rounds, the order flipped every round.\n\n"
            + C.table(["what", "ratio", "median ms"], [
                ["`quipu add -t TITLE -f NOTE` vs `git add FILE && git commit`", f"{a / g:.1f}x", f"{a * 1000:.0f}"],
                ["the same `quipu add` alone (`QUIPU_COMMAND_SERVER=off`; also the first after 15 idle minutes)",
                 f"{al / g:.1f}x", f"{al * 1000:.0f}"],
                ["`git add FILE && git commit` (two processes)", "1.0x", f"{g * 1000:.0f}"],
                [f"`{os.path.basename(sys.executable)} -c pass` (the interpreter alone)", f"{b / g:.1f}x",
                 f"{b * 1000:.0f}"],
            ])
            + f"\n\n- goal `quipu add` <= {GOAL_RATIO:g}x: " + ("met" if a / g <= GOAL_RATIO else "NOT met")
            + " (answered by the command server, which the first one-memory command starts; alone: "
            + ("met" if al / g <= GOAL_RATIO else "not met") + ")\n"
        )
        print(body)
        if args.write_results:
            C.update_results("bench_add", "One `quipu add` against one `git commit`", body,
                             command=C.command_line(), machine_line=machine_line)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
