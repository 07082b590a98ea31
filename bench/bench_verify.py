"""Benchmark of verification (issue 5): 1,000 path and branch claims, no model. Goal <= 5 s.

The store holds N/2 memories naming a backticked path (found by the deterministic extractor) and
N/2 memories naming a branch of a real local git repository (claims written directly by a
fixed extractor: the deterministic one does not look for branches). One in ten paths and one in
ten branches do not exist, so a cold run also writes N/10 label commits.

Measured, each with ``quipu.verify.verify.verify`` in this process:
- cold: empty claim cache, extraction + validation + checks + label commits + cache writes;
- warm: the same again (cached extractions, labels unchanged so no commit), with --jobs 4 and 1;
- baseline in the same run: the least the checks cost, a plain loop of ``os.path.lexists`` over
  the paths and one ``git rev-parse --verify`` process per branch.

Usage: python bench/bench_verify.py [--claims 1000] [--keep DIR] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.index import index  # noqa: E402
from quipu.verify.claims import DeterministicExtractor, RawClaims  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from quipu.verify.verify import Options, Summary, verify  # noqa: E402

GOAL_S = 5.0
_BRANCH = re.compile(r"on branch (\S+)\.")


class DirectExtractor:
    """Paths through the deterministic extractor; branches written as claims directly."""

    identity = "bench-direct:v1"

    def __init__(self) -> None:
        self.paths = DeterministicExtractor()

    def extract(self, memory: Memory) -> RawClaims:
        m = _BRANCH.search(memory.body)
        if m is None:
            return self.paths.extract(memory)
        return [{"probe": "git-branch-exists", "args": {"root": "project", "repo": ".", "branch": m.group(1)}}]


def build(scratch: Path, claims: int) -> tuple[Path, list[str], list[str], list[Memory]]:
    project = scratch / "project"
    (project / "src").mkdir(parents=True)
    half = claims // 2
    paths = [f"src/module_{i:04d}.py" for i in range(half)]
    branches = [f"feature/topic-{i:04d}" for i in range(claims - half)]
    for i, rel in enumerate(paths):
        if i % 10 != 9:  # one in ten is dead
            (project / rel).write_text("")
    subprocess.run(["git", "-C", str(project), "init", "-q", "-b", "main"], check=True)
    subprocess.run(["git", "-C", str(project), "add", "src"], check=True)
    subprocess.run(["git", "-C", str(project), "commit", "-q", "-m", "files"], check=True)
    head = subprocess.run(["git", "-C", str(project), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    refs = "".join(f"create refs/heads/{b} {head}\n" for i, b in enumerate(branches) if i % 10 != 9)
    subprocess.run(["git", "-C", str(project), "update-ref", "--stdin"], input=refs, text=True, check=True)
    memories = []
    for i, rel in enumerate(paths):
        fields = {"id": f"pa-{i:05d}", "title": f"Module {i}", "class": "reference", "created": C.FIXED_CREATED}
        memories.append(Memory.create(fields, f"The handler for case {i} is `{rel}`.\n"))
    for i, branch in enumerate(branches):
        fields = {"id": f"br-{i:05d}", "title": f"Topic {i}", "class": "project-note", "created": C.FIXED_CREATED}
        memories.append(Memory.create(fields, f"Work on topic {i} happens on branch {branch}.\n"))
    return project, paths, branches, memories


def baseline(project: Path, paths: list[str], branches: list[str]) -> float:
    start = time.perf_counter()
    for rel in paths:
        os.path.lexists(project / rel)
    for branch in branches:
        subprocess.run(["git", "-C", str(project), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
                       stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return time.perf_counter() - start


def timed_run(store, extractor, options: Options) -> tuple[float, Summary]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    summary = verify(store, extractor, options)
    return time.perf_counter() - start, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "verify")
    C.isolate(scratch)
    try:
        project, paths, branches, memories = build(scratch, args.claims)
        store, count = C.bulk_store(scratch / "store", memories)
        index.ensure_fresh(store)
        options = Options(home=str(scratch / "home"), roots={"project": str(project)}, timeout=10.0, jobs=4)
        extractor = DirectExtractor()

        cold_s, cold = timed_run(store, extractor, options)
        warm_s, warm = timed_run(store, extractor, options)
        warm1_s, warm1 = timed_run(store, extractor, options._replace(jobs=1))
        base_s = baseline(project, paths, branches)
    finally:
        C.cleanup(scratch, args.keep)

    assert cold.extracted == args.claims, cold.counts()
    expected_fail = len(paths) // 10 + len(branches) // 10
    assert (cold.failed, cold.labelled, warm.labelled, warm.extractions) == (expected_fail, expected_fail, 0, 0)

    def phases(s: Summary) -> str:
        return ", ".join(f"{k} {v:.2f}" for k, v in s.seconds.items())

    rows = [
        ("cold: extract + validate + check + label commits (jobs 4)", f"{cold_s:.2f}", cold.extracted,
         f"{cold.passed}/{cold.failed}/{cold.unknown}", len(cold.commits), phases(cold)),
        ("warm: cached extractions, no label change (jobs 4)", f"{warm_s:.2f}", warm.extracted,
         f"{warm.passed}/{warm.failed}/{warm.unknown}", len(warm.commits), phases(warm)),
        ("warm, jobs 1", f"{warm1_s:.2f}", warm1.extracted,
         f"{warm1.passed}/{warm1.failed}/{warm1.unknown}", len(warm1.commits), phases(warm1)),
        ("baseline: lexists loop + one `git rev-parse` per branch, sequential", f"{base_s:.2f}", args.claims,
         "", "", ""),
    ]
    body = C.table(["run", "wall s", "claims", "pass/fail/unknown", "commits", "phases (s)"], rows)
    verdict = "met" if cold_s <= GOAL_S else "NOT met"
    body += (
        f"\n\n{count} memories: {len(paths)} path claims (deterministic extractor), {len(branches)} branch claims "
        f"(written directly) against a real repository; one in ten of each is dead.\n"
        "Phases: extract = read the memories, extract (or read the claim cache) and validate every claim; "
        "check = run the probes; label = label commits and the claim-result writes.\n"
        f"Goal <= {GOAL_S:g} s for {args.claims} claims: {verdict} (cold run {cold_s:.2f} s, "
        f"{1000 * cold_s / args.claims:.2f} ms per claim; warm {warm_s / base_s:.2f}x the sequential baseline)."
    )
    print(body)
    if args.write_results:
        C.update_results("verify", "Verification (issue 5)", body, command=C.command_line(), machine_line=machine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
