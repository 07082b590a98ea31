"""Benchmark: one curator sweep over a store of N memories (default 2,000) with the scripted model.

Measures wall time (store load, deterministic pass, candidate selection, the model pass with its
commits), model calls and characters sent, beside the number of all pairs n*(n-1)/2 and of the
candidate pairs. The goal: the candidate selection sends the model well under 1% of all pairs.

The store is synthetic but shaped like a real one: topics and entities drawn from Zipf-like
distributions (a few very common subjects, a long tail), 1-3 topics and 0-2 entities per memory,
and about 3% of memories restating an older one (the pairs a sweep exists to find). The scripted
model supersedes those with full scope and answers the rest by a hash of the pair: mostly
unrelated, some partial, a few low-confidence supersessions (which the guards queue).

    python bench/bench_sweep.py [--memories 2000] [--seed 7] [--keep DIR] [--json] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402 - bench/_common.py: isolation, bulk stores, RESULTS.md sections

from quipu.index import index  # noqa: E402
from quipu.curate import candidates, deterministic  # noqa: E402
from quipu.curate.corpus import load  # noqa: E402
from quipu.curate.ledger import load_ledger  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from quipu.model import Budget, ScriptedModel  # noqa: E402
from quipu.curate.sweep import DEFAULT_MAX_CALLS, DEFAULT_MAX_CHARS, run_sweep  # noqa: E402

WORDS = """
deploy release staging production database postgres redis cache queue worker billing invoice ledger
stripe payment refund tax customer account login session token oauth cookie cdn cloudfront asset image
upload storage bucket backup snapshot migration schema index query latency timeout retry alert pager
oncall runbook incident rollback canary feature flag experiment metric dashboard grafana logging trace
kafka topic consumer producer lambda function container docker kubernetes cluster node pod helm chart
terraform module network vpn dns certificate tls firewall permission role policy secret vault config
build pipeline test flaky lint format typing python rust golang node react frontend backend api endpoint
graphql webhook email notification sms template search ranking recall memory prompt model budget quota
""".split()
RARE: list[str] = []
CLASSES = ["fact"] * 5 + ["project-note"] * 4 + ["reference"] * 2 + ["rule", "preference", "event"]


def _zipf(rng: random.Random, items: list[str], k: int) -> list[str]:
    weights = [1.0 / (i + 1) ** 0.9 for i in range(len(items))]
    return list(dict.fromkeys(rng.choices(items, weights=weights, k=k)))


def make_memories(n: int, seed: int) -> tuple[list[Memory], set[tuple[str, str]]]:
    rng = random.Random(seed)
    global RARE
    RARE = [f"{rng.choice('bdfgklmnprstvz')}{rng.choice('aeiou')}{rng.choice('bdfgklmnprstvz')}"
            f"{rng.choice('aeiou')}{rng.choice('kmnrstx')}{i}" for i in range(n)]
    topics = [f"{a} {b}" for a, b in zip(rng.sample(WORDS, 100), rng.sample(WORDS, 100), strict=True)]
    entities = [f"{w.capitalize()}{i}" for i, w in enumerate(rng.sample(WORDS, 80))]
    memories: list[Memory] = []
    updates: set[tuple[str, str]] = set()
    for i in range(n):
        mid = f"m{i:05d}"
        day = 1 + i * 700 // n
        created = f"{2025 + day // 365}-{1 + (day % 365) // 31:02d}-{1 + (day % 365) % 28:02d}T10:00:00Z"
        if memories and rng.random() < 0.03:  # restates an older memory: a real supersession
            old = rng.choice(memories)
            memories.append(Memory.create({
                "id": mid, "title": f"{old.title} (updated)", "class": old.cls, "created": created,
                "topics": list(old.topics), "entities": list(old.entities)}, old.body + " Changed since."))
            updates.add((old.id, mid))
            continue
        # Real titles name something specific (a service, a customer, a ticket): two rare words.
        title = " ".join(rng.sample(WORDS, rng.randint(3, 5)) + rng.sample(RARE, 2)).capitalize()
        body = " ".join(" ".join(rng.choices(WORDS, k=rng.randint(8, 15))).capitalize() + "."
                        for _ in range(rng.randint(2, 4)))
        memories.append(Memory.create({
            "id": mid, "title": title, "class": rng.choice(CLASSES), "created": created,
            "topics": _zipf(rng, topics, rng.randint(1, 3)),
            "entities": _zipf(rng, entities, rng.randint(0, 2))}, body))
    return memories, updates


def responder(updates: set[tuple[str, str]]) -> Any:
    def answer(prompt: str, schema: dict[str, Any], purpose: str) -> dict[str, Any]:
        a, b = re.findall(r'<memory id="([^"]+)">', prompt)
        claims = ["the old statement"]
        if (a, b) in updates or (b, a) in updates:
            old, new = (a, b) if (a, b) in updates else (b, a)
            return {"verdict": "supersedes", "winner": new, "loser": old, "confidence": 0.9,
                    "covered_claims": claims, "loser_claims": claims, "full_scope": True, "reason": "restated"}
        roll = zlib.crc32(f"{a}|{b}".encode()) % 100
        verdict = "unrelated" if roll < 90 else "partial" if roll < 97 else "supersedes"
        return {"verdict": verdict, "winner": b, "loser": a, "confidence": 0.6, "covered_claims": [],
                "loser_claims": claims, "full_scope": False, "reason": "scripted"}
    return answer


def _sweep_row(name: str, report: Any, all_pairs: int, seconds: float) -> dict[str, Any]:
    return {
        "run": name, "seconds": round(seconds, 2), "candidates": report.candidate_pairs,
        "calls": report.usage.get("calls", 0), "chars_sent": report.usage.get("chars_sent", 0),
        "sent_share_pct": round(100.0 * report.usage.get("calls", 0) / all_pairs, 3),
        "applied": len(report.applied), "queued": len(report.queued), "unrelated": report.unrelated,
        "deferred": report.deferred, "dropped": report.dropped, "commits": len(report.commits),
    }


def run(n: int, seed: int, scratch: Path) -> dict[str, Any]:
    memories, updates = make_memories(n, seed)
    all_pairs = n * (n - 1) // 2
    base, _count = C.bulk_store(scratch / "store", memories)
    t0 = time.perf_counter()
    index.ensure_fresh(base)
    t_index = time.perf_counter() - t0

    t0 = time.perf_counter()
    corpus = load(base)
    ledger = load_ledger(base)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    findings = deterministic.find_duplicates(corpus) + deterministic.find_dead_paths(corpus)
    t_det = time.perf_counter() - t0
    t0 = time.perf_counter()
    pairs = candidates.candidate_pairs(base, corpus, is_decided=ledger.is_decided)
    t_cand = time.perf_counter() - t0
    planted = sum(1 for p in pairs if (p.a, p.b) in updates or (p.b, p.a) in updates)

    rows = []
    daily = C.copy_store(scratch / "store", scratch / "daily")
    model = ScriptedModel(responder=responder(updates))
    t0 = time.perf_counter()
    report = run_sweep(daily, model, Budget(DEFAULT_MAX_CALLS, DEFAULT_MAX_CHARS))
    rows.append(_sweep_row(f"daily budget ({DEFAULT_MAX_CALLS} calls, {DEFAULT_MAX_CHARS:,} chars)", report,
                           all_pairs, time.perf_counter() - t0))
    full = base
    t0 = time.perf_counter()
    report = run_sweep(full, model, Budget())
    rows.append(_sweep_row("no budget: every candidate sent", report, all_pairs, time.perf_counter() - t0))
    applied = {(a["loser"], a["winner"]) for a in report.applied}
    planted_queued = [q for q in report.queued if (q["loser"], q["winner"]) in updates]
    planted_overlap = sum(1 for q in planted_queued if not q["guards"]["overlap"])
    t0 = time.perf_counter()
    again = run_sweep(full, model, Budget())
    rows.append(_sweep_row("the same sweep again: decided pairs are not re-asked", again, all_pairs,
                           time.perf_counter() - t0))
    return {
        "memories": n, "all_pairs": all_pairs, "candidate_pairs": len(pairs),
        "candidate_share_pct": round(100.0 * len(pairs) / all_pairs, 3),
        "planted_updates": len(updates), "planted_updates_in_candidates": planted,
        "planted_updates_applied": len(applied & updates), "planted_updates_queued": len(planted_queued),
        "planted_updates_queued_by_overlap": planted_overlap, "findings": len(findings),
        "phases": {"index_build": round(t_index, 2), "load": round(t_load, 2), "deterministic": round(t_det, 2),
                   "candidates": round(t_cand, 2)},
        "sweeps": rows,
    }


def _markdown(result: dict[str, Any]) -> str:
    ph = result["phases"]
    lines = [
        C.table(["run", "wall s", "candidate pairs", "model calls", "chars sent", "calls / all pairs",
                 "applied", "queued", "unrelated", "dropped", "left for next run", "commits"],
                [(r["run"], r["seconds"], f"{r['candidates']:,}", f"{r['calls']:,}", f"{r['chars_sent']:,}",
                  f"{r['sent_share_pct']}%", r["applied"], r["queued"], r["unrelated"], r["dropped"], r["deferred"], r["commits"])
                 for r in result["sweeps"]]),
        "",
        f"{result['memories']:,} memories: {result['all_pairs']:,} pairs in all; candidate selection "
        f"(shared topics/entities, strong title overlap, {candidates.PER_MEMORY} partners per memory) keeps "
        f"{result['candidate_pairs']:,}, {result['candidate_share_pct']}% of all pairs.",
        f"Phases before the model pass (s): index build {ph['index_build']}, load {ph['load']}, deterministic pass "
        f"{ph['deterministic']}, candidate selection {ph['candidates']}.",
        f"Planted restatements: {result['planted_updates']}; {result['planted_updates_in_candidates']} among the "
        f"candidates; with every candidate sent, {result['planted_updates_applied']} applied, "
        f"{result['planted_updates_queued']} queued for review ({result['planted_updates_queued_by_overlap']} of them "
        "because the pair shares fewer than two topics and fewer than two entities: the overlap guard), the rest "
        "dropped because their original had been superseded by another restatement first. Deterministic findings: "
        f"{result['findings']} (memories restating the same original twice are identical).",
        "Dropped: pairs whose other member was superseded earlier in the same sweep (nothing left to decide). "
        "The scripted model answers at once, so wall time is quipu's own cost: candidate selection, prompts, "
        "verdict checks, one commit per decision. With `claude -p` each call adds seconds; the daily budget bounds that.",
        f"Goal: the model is sent well under 1% of all pairs: met ({result['candidate_share_pct']}%).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", metavar="DIR", help="build the stores in DIR and keep them")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    scratch = C.scratch_dir(args.keep, "sweep")
    C.isolate(scratch)
    machine = C.machine()
    try:
        result = run(args.memories, args.seed, scratch)
    finally:
        C.cleanup(scratch, args.keep)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(_markdown(result))
    if args.write_results:
        C.update_results("sweep", "Curator sweep (issue 4)", _markdown(result), command=C.command_line(),
                         machine_line=machine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
