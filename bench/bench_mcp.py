"""Benchmark of `quipu mcp` (issue 17): start to first answer, and search on a warm server.

A store of 10,000 synthetic memories (``_common.Corpus``). The server runs exactly as `quipu
install claude` registers it (``<python> -I hooks/quipu_mcp.py``), driven by the SDK's own
client over stdio.

(a) Server start to first tool answer: from spawning the server to the answer of its first
    ``search_memory`` call (the protocol handshake, the SDK's imports, opening the store and the
    index), beside ``quipu search QUERY --json`` as a fresh process and, as a reference, a process
    that only imports the SDK's server modules.
(b) ``search_memory`` p50 on a warm server (one session, the index kept open), beside the same
    queries through ``quipu search`` as a fresh process. Rounds alternate the two so they share
    the machine's noise. Every answer is checked to name the memory the query was made from.

Usage: python bench/bench_mcp.py [--memories 10000] [--starts 5] [--rounds 20] [--write-results]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from mcp import Client, StdioServerParameters  # noqa: E402

from quipu.index import index  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from quipu.store.store import Store  # noqa: E402

LAUNCHER = C.REPO / "hooks" / "quipu_mcp.py"
PYTHON = os.path.abspath(sys.executable)


def query_for(memory: Memory) -> str:
    return " ".join(memory.title.lower().split()[:3])


def server(root: Path, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=PYTHON, args=["-I", str(LAUNCHER)], env={**env, "QUIPU_STORE": str(root)},
                                 cwd=str(root))


def check(text: str, target: Memory) -> None:
    if f"(id {target.id}," not in text:
        raise SystemExit(f"bench: the answer does not name {target.id}:\n{text[:500]}")


async def first_answer(params: StdioServerParameters, target: Memory) -> float:
    start = time.perf_counter()
    async with Client(params) as client:
        result = await client.call_tool("search_memory", {"query": query_for(target)})
        elapsed = time.perf_counter() - start
    check(result.content[0].text, target)
    return elapsed


def fresh_search(root: Path, target: Memory, env: dict[str, str], out: Path) -> float:
    wall, _rss, status = C.spawn_timed([PYTHON, "-m", "quipu", "--store", str(root), "search", query_for(target),
                                        "--json"], stdout=str(out), env=env, cwd=str(C.REPO))
    if status != 0 or target.id not in out.read_text():
        raise SystemExit(f"bench: quipu search failed or missed {target.id}")
    return wall


async def warm_rounds(params: StdioServerParameters, root: Path, targets: list[Memory], env: dict[str, str],
                      out: Path) -> tuple[list[float], list[float]]:
    warm: list[float] = []
    fresh: list[float] = []
    async with Client(params) as client:
        await client.call_tool("search_memory", {"query": "warm up"})
        for target in targets:
            fresh.append(fresh_search(root, target, env, out))
            start = time.perf_counter()
            result = await client.call_tool("search_memory", {"query": query_for(target)})
            warm.append(time.perf_counter() - start)
            check(result.content[0].text, target)
    return warm, fresh


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memories", type=int, default=10_000, help="store size (default 10,000)")
    p.add_argument("--starts", type=int, default=5, help="server starts timed in (a) (default 5)")
    p.add_argument("--rounds", type=int, default=20, help="warm/fresh query pairs in (b) (default 20)")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    p.add_argument("--write-results", action="store_true", help="update the bench_mcp section of bench/RESULTS.md")
    args = p.parse_args(argv)
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-mcp")
    env = C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    try:
        corpus = C.Corpus(seed=17)
        memories = corpus.memories(args.memories)
        root = scratch / "store"
        C.bulk_store(root, memories, checkout=False)
        index.ensure_fresh(Store(root))
        targets = [memories[(i * 7919) % len(memories)] for i in range(args.rounds + args.starts)]
        params = server(root, env)
        out = scratch / "search.json"
        starts, fresh_a, imports = [], [], []
        for target in targets[: args.starts]:
            starts.append(asyncio.run(first_answer(params, target)))
            fresh_a.append(fresh_search(root, target, env, out))
            imports.append(C.spawn_timed([PYTHON, "-I", "-c", "import mcp.server.lowlevel, mcp.server.stdio"],
                                         env=env)[0])
        warm, fresh_b = asyncio.run(warm_rounds(params, root, targets[args.starts:], env, out))
    finally:
        C.cleanup(scratch, args.keep)
    start_p50, fresh_a_p50, import_p50 = (C.median(v) * 1000 for v in (starts, fresh_a, imports))
    warm_p50, fresh_b_p50 = C.median(warm) * 1000, C.median(fresh_b) * 1000
    warm_p90 = C.percentile(warm, 90) * 1000
    rows_a = [
        ["`quipu mcp`: spawn, handshake, first `search_memory` answer", f"{start_p50:.0f}",
         f"{start_p50 / fresh_a_p50:.2f}x"],
        ["`quipu search QUERY --json`, a fresh process (baseline)", f"{fresh_a_p50:.0f}", "1.00x"],
        ["reference: a process importing only the SDK's server modules", f"{import_p50:.0f}",
         f"{import_p50 / fresh_a_p50:.2f}x"],
    ]
    rows_b = [
        ["`search_memory` on a warm server (client round trip)", f"{warm_p50:.1f}", f"{warm_p90:.1f}",
         f"{warm_p50 / fresh_b_p50:.3f}x"],
        ["`quipu search QUERY --json`, a fresh process (baseline)", f"{fresh_b_p50:.1f}",
         f"{C.percentile(fresh_b, 90) * 1000:.1f}", "1.000x"],
    ]
    body = (
        f"Store: {args.memories:,} synthetic memories; the server as `quipu install claude` registers it "
        "(`python -I hooks/quipu_mcp.py`), driven by the `mcp` SDK's client over stdio.\n\n"
        f"### (a) Server start to first tool answer (median of {args.starts})\n\n"
        + C.table(["what", "median ms", "vs fresh `quipu search`"], rows_a)
        + f"\n\n### (b) Search on a warm server ({len(warm)} queries, alternated with the baseline)\n\n"
        + C.table(["what", "p50 ms", "p90 ms", "vs fresh `quipu search`"], rows_b)
        + f"\n\nReading: a warm server answers `search_memory` in {warm_p50:.1f} ms p50, "
        f"{fresh_b_p50 / warm_p50:.0f}x faster than `quipu search` as a fresh process ({fresh_b_p50:.0f} ms); "
        f"starting a server and getting its first answer costs {start_p50:.0f} ms, about what a process that "
        f"only imports the SDK's server modules takes ({import_p50:.0f} ms): the start is the SDK's imports."
    )
    print(body)
    if args.write_results:
        C.update_results("bench_mcp", "MCP server (issue 17): bench/bench_mcp.py", body, command=C.command_line(),
                         machine_line=machine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
