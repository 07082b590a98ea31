"""Recall and silence after the sweep's enrichment (aliases for the memories that have none).

A note imported as it was written holds only its author's words. The sweep asks the model for
the words a person would type instead (``quipu.curate.enrichment``). This bench measures what
that does to the prompt hook on real notes and real prompts. It compares the same stores as
imported and after the enrichment pass, in the same run.

The model's answers are a recorded run, ``bench/data/enrich_aliases.json``. For each of the
1,797 real notes of memories-real it holds the aliases a Claude model wrote when given
``quipu.capture.enrich.alias_prompt`` for that note alone, with nothing else: no prompt of any
pair, no other note. The bench replays that run through the real pass: a scripted model that
answers each batch prompt with the recorded aliases of the notes it names. Everything else is
the shipped code: the batching, the alias filter (copies of the note's own words, secrets and
instructions are dropped), one commit per memory, and the index refresh.

Stores (``bench_precision``'s): ``full`` (every real note and the example store) and
``foreign`` (less the notes of the topical prompts' authors). Each is measured as imported and
as enriched.

Measured on each store state:
- conversational prompts that inject (the full store; goal 0);
- topical prompts whose store holds nothing for them that inject (the foreign store; goal <= 5%);
- held-out pairs (``--pairs``, repeatable): the paired real note among the two injected.

Plain FTS5 BM25 over the same texts (aliases included once enriched) is the baseline beside
each figure.

Usage: python bench/bench_enrich.py [--data DIR] [--pairs FILE ...] [--keep DIR] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import bench_precision as P  # noqa: E402

from quipu.capture import enrich  # noqa: E402
from quipu.curate import corpus, enrichment  # noqa: E402
from quipu.index import index  # noqa: E402
from quipu.model import Budget, MeteredModel, ScriptedModel  # noqa: E402
from quipu.store.store import Store  # noqa: E402
from testing import realistic as R  # noqa: E402

RECORDED = C.REPO / "bench" / "data" / "enrich_aliases.json"
_BLOCK = re.compile(r'<note n="(\d+)">\n(.*?)\n</note>', re.S)


def replay_model(memories: dict[str, object], recorded: dict[str, list[str]]) -> ScriptedModel:
    """A model that answers a batch prompt with the recorded aliases of each note it shows."""
    by_block: dict[str, str] = {}
    for mid, memory in memories.items():
        for _n, block in _BLOCK.findall(enrich.batch_prompt([memory])):  # type: ignore[list-item]
            by_block[block] = mid

    def respond(prompt: str, _schema: dict[str, object], _purpose: str) -> dict[str, object]:
        notes = [{"note": int(n), "aliases": recorded.get(by_block.get(block, ""), [])}
                 for n, block in _BLOCK.findall(prompt)]
        return {"notes": notes}

    return ScriptedModel(responder=respond)


class PlainWithAliases(P.PlainFts):
    """Plain FTS5 BM25 over each memory's title, aliases, description and body."""

    COLUMNS = "title, aliases, description, body"


def run_plain(db_path: Path, cases: list[P.Case]) -> list[list[str]]:
    fts = PlainWithAliases(db_path)
    return [fts.search(c.text) for c in cases]


def enriched_store(scratch: Path, name: str, source: Path, recorded: dict[str, list[str]]) -> tuple[Path, dict[str, object]]:
    """A copy of the store at ``source`` after the enrichment pass, and the pass's figures."""
    root = scratch / f"store-{name}-enriched"
    stamp = root / ".cache" / "enrich-figures.json"
    if stamp.is_file():
        return root, json.loads(stamp.read_text(encoding="utf-8"))
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(source, root, symlinks=True)
    store = Store(root)
    index.ensure_fresh(store)
    loaded = corpus.load(store)
    memories = {e.id: e.memory for e in loaded.entries.values()}
    model = MeteredModel(replay_model(memories, recorded), Budget(), None)
    start = time.perf_counter()
    done = enrichment.enrich_pass(store, loaded, model, "sw-bench-enrich")
    index.ensure_fresh(store)
    figures = {"seconds": round(time.perf_counter() - start, 1), "calls": model.summary().calls,
               "wanting": done.wanting, "enriched": len(done.enriched), "without": done.without,
               "skipped": len(done.skipped),
               "aliases": sum(len(item["aliases"]) for item in done.enriched)}
    stamp.write_text(json.dumps(figures), encoding="utf-8")
    return root, figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, help="the shared data folder (default ../shared/data beside the repository)")
    p.add_argument("--pairs", type=Path, action="append", metavar="FILE",
                   help="held-out pairs to measure (repeatable; default: bench/data/heldout_pairs*.json)")
    p.add_argument("--recorded", type=Path, default=RECORDED, metavar="FILE", help="the recorded model run")
    p.add_argument("--keep", metavar="DIR", help="build the stores in DIR and keep them (reused when present)")
    p.add_argument("--write-results", action="store_true", help="update the bench_enrich section of bench/RESULTS.md")
    args = p.parse_args(argv)
    if args.data:
        os.environ["QUIPU_SHARED_DATA"] = str(args.data)
    data = R.data_dir()
    if data is None:
        print(f"bench_enrich: skipped: {R.MISSING_DATA}", file=sys.stderr)
        return 0
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-enrich")
    C.isolate(scratch)
    try:
        return _run(args, data, scratch, machine)
    finally:
        C.cleanup(scratch, args.keep)


def _run(args: argparse.Namespace, data: Path, scratch: Path, machine: str) -> int:
    recorded = json.loads(args.recorded.read_text(encoding="utf-8"))["aliases"]
    notes = R.real_notes(data)
    authors = sorted({p.owner for p in R.real_prompts(data, "topical")})
    pair_files = args.pairs or sorted((C.REPO / "bench" / "data").glob("heldout_pairs*.json"))
    conversational, topical = P.conversational_cases(data), P.topical_cases(data)
    held = {f.name: P.heldout_cases(data, f) for f in pair_files}
    full = P._store(scratch, "full", notes, (), ())
    foreign = P._store(scratch, "foreign", notes, authors, ())
    full_e, full_figures = enriched_store(scratch, "full", full, recorded)
    foreign_e, _ = enriched_store(scratch, "foreign", foreign, recorded)

    def db(root: Path) -> Path:
        return root / ".cache" / "index.sqlite"

    rows = []
    for state, f_root, t_root in (("as imported", full, foreign), ("after the enrichment", full_e, foreign_e)):
        for system, run in ((P.QUIPU, P.run_quipu), (P.PLAIN, run_plain)):
            conv = run(db(f_root), conversational)
            top = run(db(t_root), topical)
            cells = [P.pct(sum(1 for ids in conv if ids), len(conv)), P.pct(sum(1 for ids in top if ids), len(top))]
            for cases in held.values():
                found = run(db(f_root), cases)
                cells.append(P.pct(sum(1 for c, ids in zip(cases, found, strict=True) if c.found(ids[:P.LIMIT])),
                                   len(cases)))
            rows.append((state, system, *cells))
    header = ("store", "system", "conversational that inject (goal 0)", "topical, nothing relevant, that inject (<= 5%)",
              *(f"{name}: note in the top two" for name in held))
    figures = full_figures
    lines = [
        f"The `full` store ({len(notes):,} real notes and the example store) enriched by the recorded run "
        f"(`{args.recorded.name}`): {figures['wanting']:,} memories without aliases, {figures['calls']} calls, "
        f"{figures['enriched']:,} memories given {figures['aliases']:,} aliases (the rest dropped by the filter: "
        f"{figures['without']} with none kept, {figures['skipped']} skipped), {figures['seconds']} s for the pass "
        "with its commits.\n",
        C.table(header, rows),
    ]
    body = "\n".join(lines)
    print(body)
    if args.write_results:
        C.update_results("bench_enrich", "Recall after the sweep's enrichment (issue 29): bench/bench_enrich.py",
                         body, command=C.command_line(), machine_line=machine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
