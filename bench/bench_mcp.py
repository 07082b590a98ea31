"""Benchmark of `quipu mcp` (issue 17): start to first answer, and search on a warm server.

A store of 10,000 memories of real text: the 1,797 real notes of ``../shared/data/memories-real``
(testing/realistic.py) and the example store, repeated to the size asked, each copy varied (its
title names the copy, and its body ends with a line on another note), so the words are real
developers' words at a real store's spread; ``--text synthetic`` (or absent data) takes
``_common.Corpus``'s made-up words instead. The server runs exactly as `quipu install claude`
registers it (``<python> -I hooks/quipu_mcp.py``), driven by the SDK's own client over stdio.

Every query is new to the server: six consecutive words of one note's body at a seeded random
place (synthetic: its title's first words), as someone who half remembers a note types it, so
each one makes the server read word pieces it has not read before.

(a) Server start to first tool answer: from spawning the server to the answer of its first
    ``search_memory`` call (the protocol handshake, the SDK's imports, opening the store and the
    index), beside ``quipu search QUERY --json`` as a fresh process and, as a reference, a process
    that only imports the SDK's server modules.
(b) ``search_memory`` p50 on a warm server (one session, the index kept open), beside the same
    queries through ``quipu search`` as a fresh process. Rounds alternate the two so they share
    the machine's noise. Whether each answer names the note the query was made from (or one of
    its copies) is counted.
(c) ``--burst`` more new queries sent eight at a time on the same warm server: each call runs on
    one of the server's worker threads, so what the first search kept serves calls from threads
    that did not open it. Failed calls (tool errors) are counted; none may fail.

Usage: python bench/bench_mcp.py [--memories 10000] [--starts 5] [--rounds 30] [--burst 200]
                                 [--text real|synthetic] [--write-results]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from mcp import Client, StdioServerParameters  # noqa: E402

from quipu.index import index  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from quipu.store.store import Store  # noqa: E402
from testing import realistic  # noqa: E402
from testing.fixtures import example_memories  # noqa: E402

LAUNCHER = C.REPO / "hooks" / "quipu_mcp.py"
PYTHON = os.path.abspath(sys.executable)
WORDS = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
IN_FLIGHT = 8


@dataclass(frozen=True)
class Query:
    text: str
    target: str  # the id of the memory it was made from; its copies' ids start with it


def real_memories(size: int) -> list[Memory]:
    """The real notes and the example store, copied (and varied) up to ``size`` memories."""
    data = realistic.data_dir()
    assert data is not None
    base = [*realistic.realistic_memories(realistic.real_notes(data)), *example_memories()]
    rng = random.Random(17)
    out = list(base[:size])
    copy = 1
    while len(out) < size:
        for m in base:
            if len(out) >= size:
                break
            other = rng.choice(base)
            fields = {"id": f"{m.id}-c{copy}", "title": f"{m.title} (copy {copy})", "class": m.cls,
                      "origin": "import", "created": realistic.CREATED}
            out.append(Memory.create(fields, f"{m.body.rstrip()}\nSee also: {other.title}.\n"))
        copy += 1
    return out


def real_queries(memories: list[Memory], count: int) -> list[Query]:
    """Six consecutive words of a body at a seeded random place, never the same text twice."""
    rng = random.Random(1797)
    originals = [m for m in memories if "-c" not in m.id[-6:] and len(WORDS.findall(m.body)) >= 12]
    seen: set[str] = set()
    out: list[Query] = []
    while len(out) < count:
        m = rng.choice(originals)
        words = WORDS.findall(m.body)
        at = rng.randrange(0, len(words) - 6)
        text = " ".join(words[at:at + 6])
        if text.lower() not in seen:
            seen.add(text.lower())
            out.append(Query(text, m.id))
    return out


def synthetic_queries(memories: list[Memory], count: int) -> list[Query]:
    return [Query(" ".join(m.title.lower().split()[:3]), m.id)
            for m in (memories[(i * 7919) % len(memories)] for i in range(count))]


def server(root: Path, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=PYTHON, args=["-I", str(LAUNCHER)], env={**env, "QUIPU_STORE": str(root)},
                                 cwd=str(root))


def names(text: str, query: Query) -> bool:
    return f"(id {query.target}," in text or f"(id {query.target}-c" in text


async def first_answer(params: StdioServerParameters, query: Query) -> float:
    start = time.perf_counter()
    async with Client(params) as client:
        result = await client.call_tool("search_memory", {"query": query.text})
        elapsed = time.perf_counter() - start
    if result.is_error:
        raise SystemExit(f"bench: the first answer failed: {result.content[0].text[:500]}")
    return elapsed


def fresh_search(root: Path, query: Query, env: dict[str, str], out: Path) -> float:
    wall, _rss, status = C.spawn_timed([PYTHON, "-m", "quipu", "--store", str(root), "search", query.text,
                                        "--json"], stdout=str(out), env=env, cwd=str(C.REPO))
    if status != 0:
        raise SystemExit(f"bench: quipu search {query.text!r} failed")
    return wall


@dataclass
class Warm:
    warm: list[float]
    fresh: list[float]
    named: int
    failed: list[str]
    burst: list[float]
    burst_failed: list[str]
    burst_seconds: float


async def warm_rounds(params: StdioServerParameters, root: Path, rounds: list[Query], burst: list[Query],
                      env: dict[str, str], out: Path) -> Warm:
    result = Warm([], [], 0, [], [], [], 0.0)
    async with Client(params) as client:
        await client.call_tool("search_memory", {"query": "warm up"})
        for query in rounds:
            result.fresh.append(fresh_search(root, query, env, out))
            start = time.perf_counter()
            answer = await client.call_tool("search_memory", {"query": query.text})
            result.warm.append(time.perf_counter() - start)
            text = answer.content[0].text
            result.named += names(text, query)
            if answer.is_error:
                result.failed.append(text)

        async def one(query: Query) -> None:
            start = time.perf_counter()
            answer = await client.call_tool("search_memory", {"query": query.text})
            result.burst.append(time.perf_counter() - start)
            if answer.is_error:
                result.burst_failed.append(answer.content[0].text)

        start = time.perf_counter()
        for at in range(0, len(burst), IN_FLIGHT):
            await asyncio.gather(*(one(q) for q in burst[at:at + IN_FLIGHT]))
        result.burst_seconds = time.perf_counter() - start
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memories", type=int, default=10_000, help="store size (default 10,000)")
    p.add_argument("--starts", type=int, default=5, help="server starts timed in (a) (default 5)")
    p.add_argument("--rounds", type=int, default=30, help="warm/fresh query pairs in (b) (default 30)")
    p.add_argument("--burst", type=int, default=200, help="queries sent eight at a time in (c) (default 200)")
    p.add_argument("--text", choices=("real", "synthetic"), default="real",
                   help="the real notes repeated to size (default), or made-up words")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    p.add_argument("--write-results", action="store_true", help="update the bench_mcp section of bench/RESULTS.md")
    args = p.parse_args(argv)
    if args.text == "real" and realistic.data_dir() is None:
        print(f"bench_mcp: {realistic.MISSING_DATA}; using made-up words", file=sys.stderr)
        args.text = "synthetic"
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-mcp")
    env = C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    try:
        if args.text == "real":
            memories = real_memories(args.memories)
            queries = real_queries(memories, args.starts + args.rounds + args.burst)
        else:
            memories = C.Corpus(seed=17).memories(args.memories)
            queries = synthetic_queries(memories, args.starts + args.rounds + args.burst)
        root = scratch / "store"
        C.bulk_store(root, memories, checkout=False)
        index.ensure_fresh(Store(root))
        params = server(root, env)
        out = scratch / "search.json"
        starts, fresh_a, imports = [], [], []
        for query in queries[: args.starts]:
            starts.append(asyncio.run(first_answer(params, query)))
            fresh_a.append(fresh_search(root, query, env, out))
            imports.append(C.spawn_timed([PYTHON, "-I", "-c", "import mcp.server.lowlevel, mcp.server.stdio"],
                                         env=env)[0])
        rounds = queries[args.starts: args.starts + args.rounds]
        warm = asyncio.run(warm_rounds(params, root, rounds, queries[args.starts + args.rounds:], env, out))
    finally:
        C.cleanup(scratch, args.keep)
    body = report(args, len(memories), starts, fresh_a, imports, warm)
    print(body)
    if args.write_results:
        C.update_results("bench_mcp", "MCP server (issue 17): bench/bench_mcp.py", body, command=C.command_line(),
                         machine_line=machine)
    failed = len(warm.failed) + len(warm.burst_failed)
    if failed:
        print(f"bench_mcp: {failed} calls failed; the first: {(warm.failed + warm.burst_failed)[0][:500]}",
              file=sys.stderr)
    return 1 if failed else 0


def report(args: argparse.Namespace, size: int, starts: list[float], fresh_a: list[float], imports: list[float],
           warm: Warm) -> str:
    start_p50, fresh_a_p50, import_p50 = (C.median(v) * 1000 for v in (starts, fresh_a, imports))
    warm_p50, fresh_b_p50 = C.median(warm.warm) * 1000, C.median(warm.fresh) * 1000
    burst_p50 = C.median(warm.burst) * 1000 if warm.burst else 0.0
    rows_a = [
        ["`quipu mcp`: spawn, handshake, first `search_memory` answer", f"{start_p50:.0f}",
         f"{start_p50 / fresh_a_p50:.2f}x"],
        ["`quipu search QUERY --json`, a fresh process (baseline)", f"{fresh_a_p50:.0f}", "1.00x"],
        ["reference: a process importing only the SDK's server modules", f"{import_p50:.0f}",
         f"{import_p50 / fresh_a_p50:.2f}x"],
    ]
    rows_b = [
        ["`search_memory` on a warm server (client round trip)", f"{warm_p50:.1f}",
         f"{C.percentile(warm.warm, 90) * 1000:.1f}", f"{warm_p50 / fresh_b_p50:.3f}x", str(len(warm.failed))],
        ["`quipu search QUERY --json`, a fresh process (baseline)", f"{fresh_b_p50:.1f}",
         f"{C.percentile(warm.fresh, 90) * 1000:.1f}", "1.000x", "0"],
    ]
    rows_c = [[f"{len(warm.burst)} new queries, {IN_FLIGHT} in flight", f"{burst_p50:.1f}",
               f"{C.percentile(warm.burst, 90) * 1000:.1f}" if warm.burst else "-",
               f"{len(warm.burst) / warm.burst_seconds:.0f}" if warm.burst_seconds else "-", str(len(warm.burst_failed))]]
    what = ("the 1,797 real notes of memories-real and the example store, repeated and varied"
            if args.text == "real" else "synthetic memories")
    return (
        f"Store: {size:,} memories ({what}); every query new to the server; the server as `quipu install "
        "claude` registers it (`python -I hooks/quipu_mcp.py`), driven by the `mcp` SDK's client over stdio.\n\n"
        f"### (a) Server start to first tool answer (median of {args.starts})\n\n"
        + C.table(["what", "median ms", "vs fresh `quipu search`"], rows_a)
        + f"\n\n### (b) Search on a warm server ({len(warm.warm)} queries, alternated with the baseline)\n\n"
        + C.table(["what", "p50 ms", "p90 ms", "vs fresh `quipu search`", "failed calls"], rows_b)
        + f"\n\nThe warm answer named the note the query was made from (or a copy) for {warm.named} of "
        f"{len(warm.warm)} queries.\n\n### (c) New queries at once on the warm server\n\n"
        + C.table(["what", "p50 ms per call", "p90 ms", "calls per second", "failed calls"], rows_c)
        + f"\n\nReading: a fresh `quipu search` process takes {fresh_b_p50 / warm_p50:.0f}x as long as a warm "
        f"`search_memory` ({fresh_b_p50:.0f} ms against {warm_p50:.1f} ms p50), with "
        f"{len(warm.failed) + len(warm.burst_failed)} failed calls of {len(warm.warm) + len(warm.burst)}; "
        f"starting a server and getting its first answer costs {start_p50:.0f} ms, about what a process that "
        f"only imports the SDK's server modules takes ({import_p50:.0f} ms): the start is the SDK's imports."
    )


if __name__ == "__main__":
    raise SystemExit(main())
