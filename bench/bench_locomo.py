"""LoCoMo evidence recall through quipu's real recall path (issue 3 quality), beside plain BM25.

Data: ``<repo>/../shared/data/locomo/locomo10.json`` (CC BY-NC 4.0, read at run time, never copied
into this repository; skipped with a message when absent).

Each conversation becomes one store: every turn is one memory whose searchable text equals the
baselines' row, ``"<speaker>: <text>"`` plus ``" [image: <blip_caption>]"`` when present. The
title is neutral by default (the turn's ``D<session>T<turn>`` label, one token no question
uses), so the comparison is about ranking rules, not about extra text; ``--title`` tries others.
Memories are ``event`` notes that never decay (``--decay`` keeps the class default and asks "the
day after the last session"), written as a store kept during the conversation would have them:
each carries its session (``<conversation>-session-<n>``) and is dated at its session's date and
time plus one minute a turn.
Stores are written in bulk (one fast-import commit), then indexed by ``index.ensure_fresh``.

Each question goes through ``quipu.prompt.recall.recall`` on the store's index with the options the hook
reads from the store (``Options.from_config``) but ``limit=5``, so recall@5 can be measured; the
hook's default limit (2) is reported as hit@2 (the first two hits; the ranking does not depend
on the limit here: no fact notes, no session exclusions).

Baselines in the same run, per conversation:
- plain FTS5: one row per turn, ``tokenize='porter unicode61'``, the question's non-stopword
  words quoted and OR-ed, ``ORDER BY bm25()`` (the orientation figure was recall@5 0.549);
- ``rank_bm25.BM25Okapi`` over lower-cased word tokens without stop words (no stemming).

The deep list (issue 15), in the same run: ``quipu.index.deep``'s lexical gather on each store's index,
its meaning gather on the store's vectors (``quipu.index.vectors``, built here) and the two fused as
``quipu search`` fuses them, to depth 10, beside plain FTS5 and rank_bm25 to the same depth, with a
grid of fusion constants (section ``bench_locomo_deep``), how much of the evidence the gathers and
the gathers hold (the ceiling of any re-ordering of them). Other shapes of store built from the same
conversations (one speaker, no sessions, one memory a session, ...) are in ``bench_shapes.py``.

Evidence: every ``D\\d+:\\d+`` token, leading zeros dropped, turns that do not exist skipped;
questions left with no evidence are skipped. recall@k = |evidence in top k| / |evidence|;
hit@k = at least one evidence turn in the top k.

Usage: python bench/bench_locomo.py [--data PATH] [--title dia|speaker-date|first-words] [--write-results]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sqlite3
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.index import deep, index, reading, vectors  # noqa: E402
from quipu.prompt import recall  # noqa: E402
from quipu.prompt import indexread  # noqa: E402
from quipu.store.memory import Memory  # noqa: E402
from quipu.prompt.query import extract_terms  # noqa: E402
from quipu.store.store import Store  # noqa: E402

DEFAULT_DATA = C.REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
CATEGORIES = {1: "1 multi-hop", 2: "2 temporal", 3: "3 open-domain", 4: "4 single-hop", 5: "5 adversarial"}
K = 5
HOOK = "quipu, the hook's options (limit 2)"
HIT2_GAP = 0.02  # the hook's hit@2 may be at most this far below plain FTS5's (precision must not silence answers)
DIAG_QUIPU_TERMS = "plain FTS5 with quipu's terms (`query.extract_terms`)"
DIAG_RAREST = "plain FTS5, baseline terms, 3 rarest only"
DIAG_BOTH = "plain FTS5 with quipu's terms, 3 rarest only"
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
_WORD = re.compile(r"\w+")
# NLTK's English stop-word list: a baseline independent of quipu's own list.
BASELINE_STOPWORDS = reading.FUNCTION_WORDS  # NLTK's English stop words


@dataclass(frozen=True)
class Turn:
    memory_id: str
    dia: tuple[int, int]
    speaker: str
    text: str
    date: dt.datetime


@dataclass
class Question:
    conv: str
    number: int
    text: str
    category: int
    evidence: frozenset[str]
    ranked: dict[str, list[str]] = field(default_factory=dict)  # system -> top ids
    quipu_terms: list[tuple[str, int, bool]] = field(default_factory=list)
    quipu_reason: str = ""
    lexical: list[str] = field(default_factory=list)  # the deep list's lexical gather, best first
    meaning: list[tuple[str, float]] = field(default_factory=list)  # its meaning gather (id, cosine)
    specific: bool = False  # the query names a specific word the store has (meaning-only hits off)
    fused: list[str] = field(default_factory=list)  # the shipped fused list (deep.fused_list), top DEEP_K


# ------------------------------------------------------------------ data


def memory_id(conv: str, session: int, turn: int) -> str:
    return re.sub(r"[^a-z0-9-]", "-", f"{conv.lower()}-d{session}-{turn}")


def load(path: Path) -> list[tuple[str, list[Turn], list[Question]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = sample["sample_id"]
        c = sample["conversation"]
        turns: list[Turn] = []
        for key, value in c.items():
            m = re.fullmatch(r"session_(\d+)", key)
            if not m or not isinstance(value, list):
                continue
            date = dt.datetime.strptime(c[f"{key}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.timezone.utc)
            for item in value:
                dm = _EVIDENCE.fullmatch(item["dia_id"].strip())
                if not dm:
                    continue
                s, t = int(dm.group(1)), int(dm.group(2))
                text = f"{item['speaker']}: {item['text']}"
                if item.get("blip_caption"):
                    text += f" [image: {item['blip_caption']}]"
                turns.append(Turn(memory_id(conv, s, t), (s, t), item["speaker"], text, date))
        known = {t.memory_id for t in turns}
        questions = []
        for number, qa in enumerate(sample["qa"]):
            evidence = set()
            for item in qa.get("evidence") or []:
                for s, t in _EVIDENCE.findall(str(item)):
                    mid = memory_id(conv, int(s), int(t))
                    if mid in known:
                        evidence.add(mid)
            if evidence:
                questions.append(Question(conv, number, qa["question"], int(qa["category"]), frozenset(evidence)))
        out.append((conv, turns, questions))
    return out


def session_of(turn: Turn) -> str:
    return f"{turn.memory_id.rsplit('-d', 1)[0]}-session-{turn.dia[0]}"


def title_for(turn: Turn, style: str) -> str:
    if style == "speaker-date":
        return f"{turn.speaker}, {turn.date:%d %B %Y}"
    if style == "first-words":
        words = turn.text.split(":", 1)[1].split()
        return " ".join(words[:8]) or turn.speaker
    return f"D{turn.dia[0]}T{turn.dia[1]}"  # one token ("d27t7") that no question uses


def memories(turns: Iterable[Turn], title: str, decay: bool) -> list[Memory]:
    out = []
    for turn in turns:
        fields: dict[str, object] = {
            "id": turn.memory_id,
            "title": title_for(turn, title),
            "class": "event",
            "origin": "import",
            "created": (turn.date + dt.timedelta(minutes=turn.dia[1])).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "session": session_of(turn),
        }
        if not decay:
            fields["half_life_days"] = None  # never decays: dates must not re-rank the turns
        out.append(Memory.create(fields, turn.text))
    return out


# ------------------------------------------------------------------ systems


def baseline_terms(question: str) -> list[str]:
    return list(dict.fromkeys(w for w in _WORD.findall(question.lower()) if w not in BASELINE_STOPWORDS))


class PlainFts:
    """One FTS5 row per turn, OR of the quoted question terms, ORDER BY bm25()."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='porter unicode61')")
        self.db.executemany("INSERT INTO t VALUES (?, ?)", [(t.memory_id, t.text) for t in turns])

    def search(self, question: str, k: int) -> list[str]:
        return self.search_terms(baseline_terms(question), k)

    def search_terms(self, terms: Sequence[str], k: int, rarest: int = 0) -> list[str]:
        """OR of ``terms``; with ``rarest``, only that many of the terms with the lowest document
        frequency (terms absent from the conversation left out), like quipu's rule."""
        if rarest:
            df = {t: self.df(t) for t in terms}
            terms = sorted((t for t in terms if df[t] > 0), key=lambda t: df[t])[:rarest]
        if not terms:
            return []
        expr = " OR ".join(_quote(t) for t in terms)
        return [r[0] for r in self.db.execute("SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expr, k))]

    def df(self, term: str) -> int:
        return int(self.db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (_quote(term),)).fetchone()[0])


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class RankBm25:
    def __init__(self, turns: Sequence[Turn]) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = [t.memory_id for t in turns]
        self.bm25 = BM25Okapi([baseline_terms(t.text) or ["_"] for t in turns])

    def search(self, question: str, k: int) -> list[str]:
        terms = baseline_terms(question)
        if not terms:
            return []
        scores = self.bm25.get_scores(terms)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
        return [self.ids[i] for i in order]


# ------------------------------------------------------------------ metrics


def recall_at(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return len(evidence & set(ranked[:k])) / len(evidence)


def hit_at(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return 1.0 if evidence & set(ranked[:k]) else 0.0


def summarize(questions: Sequence[Question], system: str) -> dict[str, dict[str, float]]:
    groups: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        groups[CATEGORIES[q.category]].append(q)
        groups["all"].append(q)
    out = {}
    for name in [*CATEGORIES.values(), "all"]:
        qs = groups.get(name, [])
        if not qs:
            continue
        n = len(qs)
        out[name] = {
            "n": n,
            "r1": sum(recall_at(q.ranked[system], q.evidence, 1) for q in qs) / n,
            "r2": sum(recall_at(q.ranked[system], q.evidence, 2) for q in qs) / n,
            "r5": sum(recall_at(q.ranked[system], q.evidence, 5) for q in qs) / n,
            "r10": sum(recall_at(q.ranked[system], q.evidence, 10) for q in qs) / n,
            "h2": sum(hit_at(q.ranked[system], q.evidence, 2) for q in qs) / n,
            "h5": sum(hit_at(q.ranked[system], q.evidence, 5) for q in qs) / n,
            "silent": sum(1 for q in qs if not q.ranked[system]),
        }
    return out


# ------------------------------------------------------------------ the run


def quipu_variants() -> dict[str, dict[str, object]]:
    """Ablations of the recall options, each measured on the same index."""
    return {
        "quipu": {},
        HOOK: {"limit": 2},
        "quipu, floor off": {"min_score": 0.0},
        "quipu, 4 rarest terms": {"rarest": 4},
        "quipu, 5 rarest terms": {"rarest": 5},
        "quipu, all terms (no rarest-3)": {"rarest": 64},
        "quipu, all terms, floor off": {"rarest": 64, "min_score": 0.0},
    }


def run_quipu(db: sqlite3.Connection, questions: Sequence[Question], system: str, overrides: dict[str, object],
              times: list[float], keep_explain: bool, now: float | None) -> None:
    config = indexread.index_config(db)
    options = recall.Options.from_config(config, **{"limit": K, "now": now, **overrides})  # type: ignore[arg-type]
    for q in questions:
        start = time.perf_counter()
        result = recall.recall(db, q.text, "", options)
        times.append(time.perf_counter() - start)
        q.ranked[system] = [h.id for h in result.hits]
        if keep_explain:
            q.quipu_terms = result.terms
            q.quipu_reason = result.reason


def silent_reasons(questions: Sequence[Question]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for q in questions:
        if not q.ranked["quipu"]:
            counts[(q.quipu_reason or "(no reason given)").split(":")[0]] += 1  # the rule, not its details
    return dict(counts)


def fmt(x: float) -> str:
    return f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"locomo10.json (default {DEFAULT_DATA})")
    p.add_argument("--title", choices=("dia", "speaker-date", "first-words"), default="dia",
                   help="memory titles: the neutral D<s>T<t> label (default), speaker + session date, or the "
                   "turn's first 8 words (title words weigh 8x in quipu's BM25)")
    p.add_argument("--decay", action="store_true", help="keep the event class's 90-day half-life (asked the day "
                   "after each conversation's last session) instead of no decay")
    p.add_argument("--variants", action="store_true", help="also run the other title styles and decay, "
                   "reporting quipu's overall figures for each")
    p.add_argument("--examples", type=int, default=12, help="questions quipu misses but FTS5 hits to list")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder, removed)")
    p.add_argument("--write-results", action="store_true", help="update the bench_locomo section of bench/RESULTS.md")
    args = p.parse_args(argv)
    if not args.data.is_file():
        print(f"bench_locomo: skipped: no LoCoMo data at {args.data}\n- put locomo10.json there "
              "(see ../shared/data/locomo/README.md) or pass --data PATH", file=sys.stderr)
        return 0
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-locomo")
    C.isolate(scratch)
    try:
        return _run(args, scratch, machine)
    finally:
        C.cleanup(scratch, args.keep)


def build_and_rank(conversations: list[tuple[str, list[Turn], list[Question]]], scratch: Path, title: str,
                   decay: bool, systems: dict[str, dict[str, object]], tag: str, timing: dict[str, list[float]],
                   keep_explain: bool) -> float:
    start = time.perf_counter()
    for conv, turns, questions in conversations:
        root = scratch / f"{tag}-{conv}"
        C.bulk_store(root, memories(turns, title, decay), checkout=False, message=f"LoCoMo {conv}")
        index.ensure_fresh(Store(root))
        db = indexread.open_index(str(root / ".cache" / "index.sqlite"))
        now = (max(t.date for t in turns) + dt.timedelta(days=1)).timestamp() if decay else None
        for system, overrides in systems.items():
            run_quipu(db, questions, system, overrides, timing.setdefault(system, []),
                      keep_explain and system == "quipu", now)
        db.close()
        if keep_explain:
            gather_deep(root, questions, timing)
    return time.perf_counter() - start


def _run(args: argparse.Namespace, scratch: Path, machine: str) -> int:
    conversations = load(args.data)
    questions = [q for _c, _t, qs in conversations for q in qs]
    timing: dict[str, list[float]] = {}
    build_s = build_and_rank(conversations, scratch, args.title, args.decay, quipu_variants(), "main", timing, True)
    for _conv, turns, qs in conversations:
        fts, okapi = PlainFts(turns), RankBm25(turns)
        for q in qs:
            start = time.perf_counter()
            q.ranked["fts5"] = fts.search(q.text, DEEP_K)
            timing.setdefault("fts5", []).append(time.perf_counter() - start)
            start = time.perf_counter()
            q.ranked["rank_bm25"] = okapi.search(q.text, DEEP_K)
            timing.setdefault("rank_bm25", []).append(time.perf_counter() - start)
            # Decomposition: the plain engine fed with quipu's terms, and with the rarest-3 rule.
            mine = [t.text for t in extract_terms(q.text)]
            for system, terms, rarest in ((DIAG_QUIPU_TERMS, mine, 0), (DIAG_RAREST, baseline_terms(q.text), 3),
                                          (DIAG_BOTH, mine, 3)):
                start = time.perf_counter()
                q.ranked[system] = fts.search_terms(terms, K, rarest)
                timing.setdefault(system, []).append(time.perf_counter() - start)

    deep_body = deep_report(questions)
    diagnostics = [DIAG_QUIPU_TERMS, DIAG_RAREST, DIAG_BOTH]
    summary = {s: summarize(questions, s)
               for s in ["quipu", "fts5", "rank_bm25", *list(quipu_variants())[1:], *diagnostics]}
    labels = {"quipu": "quipu recall (hook options, limit 5)", "fts5": "plain FTS5 BM25, OR of terms",
              "rank_bm25": "rank_bm25 BM25Okapi"}
    rows = []
    for cat in [*CATEGORIES.values(), "all"]:
        for system in ("quipu", "fts5", "rank_bm25"):
            s = summary[system][cat]
            rows.append([cat if system == "quipu" else "", labels[system], s["n"], fmt(s["r1"]), fmt(s["r2"]),
                         fmt(s["r5"]), fmt(s["h2"]), fmt(s["h5"]), s["silent"]])
    main_table = C.table(["category", "system", "n", "recall@1", "recall@2", "recall@5", "hit@2", "hit@5",
                          "silent"], rows)

    ablation_rows = []
    for system in [*quipu_variants(), "fts5", "rank_bm25", *diagnostics]:
        s = summary[system]
        ablation_rows.append([labels.get(system, system), fmt(s["all"]["r5"]), fmt(s["all"]["h2"]),
                              *(fmt(s[c]["r5"]) for c in CATEGORIES.values()), s["all"]["silent"],
                              f"{C.median(timing[system]) * 1000:.2f}"])
    variant_note = ""
    if args.variants:
        for title, decay in (("speaker-date", False), ("first-words", False), (args.title, True)):
            if (title, decay) == (args.title, args.decay):
                continue
            tag = f"{title}{'-decay' if decay else ''}"
            system = f"quipu, title {title}" + (", 90-day decay" if decay else "")
            vt: dict[str, list[float]] = {}
            build_and_rank(conversations, scratch, title, decay, {system: {}}, tag, vt, False)
            s = summarize(questions, system)
            ablation_rows.append([system, fmt(s["all"]["r5"]), fmt(s["all"]["h2"]),
                                  *(fmt(s[c]["r5"]) for c in CATEGORIES.values()), s["all"]["silent"],
                                  f"{C.median(vt[system]) * 1000:.2f}"])
        variant_note = (" Title variants put extra words in the 8x-weighted title field (speaker-date adds the "
                        "speaker's name and the date; first-words repeats the turn's first words); the decay "
                        "variant ranks later sessions higher.")
    ablation_table = C.table(["system", "recall@5", "hit@2", *(f"R@5 {c}" for c in CATEGORIES.values()),
                              "silent", "ms/query (median)"], ablation_rows)

    reasons = silent_reasons(questions)
    reason_text = "; ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda x: -x[1])) or "none"

    # Where quipu misses and plain FTS5 hits: the evidence for tuning.
    misses = [q for q in questions if hit_at(q.ranked["quipu"], q.evidence, K) == 0 and hit_at(q.ranked["fts5"], q.evidence, K)]
    wins = [q for q in questions if hit_at(q.ranked["fts5"], q.evidence, K) == 0 and hit_at(q.ranked["quipu"], q.evidence, K)]
    by_cause: dict[str, int] = defaultdict(int)
    for q in misses:
        by_cause[miss_cause(q)] += 1
    C.OUT.mkdir(parents=True, exist_ok=True)
    miss_file = C.OUT / "locomo-misses.jsonl"
    with open(miss_file, "w", encoding="utf-8") as fh:
        for q in misses:
            fh.write(json.dumps({
                "conv": q.conv, "qa_index": q.number, "category": q.category, "question": q.text,
                "evidence": sorted(q.evidence), "cause": miss_cause(q), "quipu_reason": q.quipu_reason,
                "quipu_terms": [{"term": t, "df": d, "chosen": c} for t, d, c in q.quipu_terms],
                "baseline_terms": baseline_terms(q.text), "quipu": q.ranked["quipu"], "fts5": q.ranked["fts5"],
                "quipu_floor_off": q.ranked["quipu, floor off"], "quipu_all_terms": q.ranked["quipu, all terms (no rarest-3)"],
            }) + "\n")
    example_rows = []
    step = max(1, len(misses) // max(1, args.examples))
    for q in misses[::step][: args.examples]:
        chosen = ", ".join(f"{t}({d})" for t, d, c in q.quipu_terms if c)
        dropped = ", ".join(f"{t}({d})" for t, d, c in q.quipu_terms if not c)
        rank = next(i + 1 for i, mid in enumerate(q.ranked["fts5"]) if mid in q.evidence)
        mine = {t for t, _d, _c in q.quipu_terms}
        stopped = ", ".join(w for w in baseline_terms(q.text) if w not in mine and not any(w in t for t in mine))
        example_rows.append([f"{q.conv} #{q.number}", CATEGORIES[q.category], chosen or "-", dropped or "-",
                             stopped or "-", miss_cause(q), rank])
    cause_text = "; ".join(f"{n} {c}" for c, n in sorted(by_cause.items(), key=lambda x: -x[1]))

    q_all, f_all, b_all = summary["quipu"]["all"], summary["fts5"]["all"], summary["rank_bm25"]["all"]
    verdict = "met" if q_all["r5"] >= f_all["r5"] else "NOT met"
    h_all = summary[HOOK]["all"]
    hook_verdict = "met" if h_all["h2"] >= f_all["h2"] - HIT2_GAP else "NOT met"
    body = (
        f"{len(questions):,} questions with evidence over {len(conversations)} conversations "
        f"({sum(len(t) for _c, t, _q in conversations):,} turns, one store each; built, indexed and queried in "
        f"{build_s:.1f} s). Titles: `{args.title}`; decay: {'90-day half-life' if args.decay else 'none'}.\n\n"
        "#### Per category\n\n" + main_table
        + f"\n\nReading: quipu recall@5 {fmt(q_all['r5'])} against plain FTS5 {fmt(f_all['r5'])} and rank_bm25 "
        f"{fmt(b_all['r5'])} (goal: >= the FTS5 baseline: {verdict}; {q_all['r5']:.4f} against {f_all['r5']:.4f}); hit@2 {fmt(q_all['h2'])} against "
        f"{fmt(f_all['h2'])}. quipu stayed silent on {q_all['silent']} questions: {reason_text}.\n\n"
        f"Through the hook's path (its options, limit 2): hit@2 {fmt(h_all['h2'])} against plain FTS5's "
        f"{fmt(f_all['h2'])} (goal: at most {HIT2_GAP} below: {hook_verdict}).\n\n"
        "#### What the precision rules cost (same stores, same run)\n\n" + ablation_table
        + "\n\nReading: the floor-off and all-terms rows isolate the minimum-score floor and the three-rarest-terms "
        "rule inside quipu; the last three rows put quipu's term extraction and the rarest-3 rule into the plain "
        "FTS5 engine, so (plain FTS5 -> quipu's terms) prices the term extraction alone and (quipu's terms -> "
        "quipu, all terms, floor off) prices quipu's scoring (field weights, smoothed idf, 50 candidates) alone."
        f"{variant_note}\n\n"
        f"#### Questions quipu misses (no evidence in its top 5) but plain FTS5 finds\n\n"
        f"{len(misses)} such questions (and {len(wins)} the other way round). Causes: {cause_text}. "
        f"A spread of examples (terms with their document frequency in the conversation's store; the full list with "
        f"the questions is written to `bench/out/locomo-misses.jsonl`, git-ignored, since the data may not be copied "
        f"into the repository):\n\n"
        + C.table(["question", "category", "quipu's chosen terms (df)", "terms left out (df)",
                   "baseline terms quipu treats as stop words", "cause", "FTS5 rank of evidence"], example_rows)
    )
    print(body)
    print(deep_body)
    if args.write_results:
        C.update_results("bench_locomo", "LoCoMo evidence recall (issue 3 quality): bench/bench_locomo.py", body,
                         command=C.command_line(), machine_line=machine)
        C.update_results("bench_locomo_deep", "LoCoMo through the deep list (issue 15): bench/bench_locomo.py",
                         deep_body, command=C.command_line(), machine_line=machine)
    return 0


# ------------------------------------------------------------------ the deep list (issue 15)

DEEP_K = 10
DEEP_FUSED = "quipu search: fused (deep list)"
DEEP_LEXICAL = "quipu search --words-only (lexical gather)"
DEEP_MEANING = "meaning only (dense-only: the same vectors, cosine)"
FLOOR_SYSTEMS = (HOOK, DEEP_FUSED, DEEP_LEXICAL, DEEP_MEANING, "fts5", "rank_bm25")
# (K, meaning weight, meaning-only floor) tried; the first is what quipu.index.deep ships.
FUSION_GRID = [(deep.K, deep.MEANING_WEIGHT, deep.MEANING_ONLY_FLOOR)] + [
    (k, w, deep.MEANING_ONLY_FLOOR) for k in (10.0, 20.0, 40.0, 60.0) for w in (0.1, 0.17, 0.25, 0.5, 1.0)
] + [(deep.K, deep.MEANING_WEIGHT, float("inf"))]


def gather_deep(root: Path, questions: Sequence[Question], timing: dict[str, list[float]]) -> None:
    """The deep list for each question through ``deep.search`` on the store's own index and
    vectors (built here, timed as the deep list's first search would), and its parts: both
    gathers."""
    store = Store(root)
    cache = index.index_file(store).parent
    db = index.connect(index.index_file(store))
    try:
        start = time.perf_counter()
        found = vectors.ensure_vectors(cache, db)
        timing.setdefault("vectors build", []).append(time.perf_counter() - start)
        encoder = vectors.encoder(cache)
        nearest: deep.Nearest | None = None
        if found is not None and encoder is not None:
            def nearest(text: str, depth: int, centred: bool) -> list[tuple[str, float]]:
                return vectors.nearest(found, found.embed(encoder, text), depth, centred)
        for q in questions:
            start = time.perf_counter()
            result = deep.search(db, q.text, limit=DEEP_K, nearest=nearest)
            timing.setdefault(DEEP_FUSED, []).append(time.perf_counter() - start)
            q.ranked[DEEP_FUSED] = [h.id for h in result.hits]  # no labels, no decay: this is the list
            fusion = deep.fused_list(db, q.text, nearest)
            q.fused = [i for i, *_r in fusion.fused[:DEEP_K]]
            lex = deep.lexical(db, fusion.gathered)
            ids = deep._ids(db, [r for r, _s in lex])
            q.lexical = [ids[r] for r, _s in lex]
            q.specific = fusion.specific
            # meaning's own list, for its row and the grid, even where the shipped list leaves it out
            q.meaning = [] if nearest is None else deep.gather_meaning(db, q.text, nearest, q.specific)
            q.ranked[DEEP_LEXICAL] = q.lexical[:DEEP_K]
            q.ranked[DEEP_MEANING] = [i for i, _c in q.meaning[:DEEP_K]]
    finally:
        db.close()


def fused_ids(q: Question, k: float, weight: float, floor: float) -> list[str]:
    """The fused order with these constants (the shipped ones: ``deep.fused_list``'s own)."""
    if (k, weight, floor) == (deep.K, deep.MEANING_WEIGHT, deep.MEANING_ONLY_FLOOR):
        return q.fused
    fused = deep.fuse(q.lexical, q.meaning, k=k, meaning_weight=weight,
                      meaning_only_floor=float("inf") if q.specific else floor)
    return [i for i, *_r in fused[:DEEP_K]]


def deep_report(questions: Sequence[Question]) -> str:
    summary = {s: summarize(questions, s) for s in FLOOR_SYSTEMS}
    labels = {"fts5": "plain FTS5 BM25, OR of terms", "rank_bm25": "rank_bm25 BM25Okapi",
              HOOK: "quipu hook path (its options, limit 2)"}
    rows = []
    failed: list[str] = []
    for cat in [*CATEGORIES.values(), "all"]:
        for system in FLOOR_SYSTEMS:
            m = summary[system][cat]
            rows.append([cat if system == FLOOR_SYSTEMS[0] else "", labels.get(system, system), m["n"],
                         fmt(m["r1"]), fmt(m["r2"]), fmt(m["r5"]), fmt(m["r10"]), fmt(m["h2"])])
        fused, plain = summary[DEEP_FUSED][cat], summary["fts5"][cat]
        failed += [f"{cat} {d}" for d in ("r1", "r2", "r5", "r10") if fused[d] < plain[d]]
    grid_rows = []
    base = summary["fts5"]["all"]
    for n, (k, w, f) in enumerate(FUSION_GRID):
        name = f"grid {k:g}/{w:g}/{f:g}"
        for q in questions:
            q.ranked[name] = fused_ids(q, k, w, f)
        m = summarize(questions, name)
        below = sum(1 for cat in m for d in ("r1", "r2", "r5", "r10") if m[cat][d] < summary["fts5"][cat][d])
        grid_rows.append([f"{k:g}", f"{w:g}", "off" if f == float("inf") else f"{f:g}", fmt(m["all"]["r1"]),
                          fmt(m["all"]["r2"]), fmt(m["all"]["r5"]), fmt(m["all"]["r10"]), below,
                          "shipped" if n == 0 else ""])
    f_all, h_all = summary[DEEP_FUSED]["all"], summary[HOOK]["all"]
    only_meaning = sum(1 for q in questions for i in q.ranked[DEEP_FUSED][:5] if i not in q.lexical)
    within = sum(len(q.evidence & gathered(q)) / len(q.evidence) for q in questions) / len(questions)
    ceiling = sum(min(5, len(q.evidence & gathered(q))) / len(q.evidence) for q in questions) / len(questions)
    return (
        "#### Per category (recall@k over evidence turns; hit@2)\n\n"
        + C.table(["category", "system", "n", "R@1", "R@2", "R@5", "R@10", "hit@2"], rows)
        + f"\n\nReading: the deep list's R@5 {fmt(f_all['r5'])} / R@10 {fmt(f_all['r10'])} against plain "
        f"FTS5's {fmt(base['r5'])} / {fmt(base['r10'])} (goal R@5 >= 0.70: {'met' if f_all['r5'] >= 0.70 else 'NOT met'}). "
        f"Floor, the deep list at or above plain FTS5 at every depth in every category: "
        f"{'met' if not failed else 'NOT met (' + ', '.join(failed) + ')'}. The hook's hit@2 {fmt(h_all['h2'])} against "
        f"plain FTS5's {fmt(base['h2'])} ({'met' if h_all['h2'] >= base['h2'] else 'NOT met'}: at or above). "
        f"In the deep list's top 5: {only_meaning} hits found by meaning alone. "
        "The hook path lists at most 5 here, so its R@10 is its R@5.\n\n"
        "#### Fusion grid (reciprocal rank: K, meaning weight, cosine floor for meaning-only hits), "
        "the fused order\n\n"
        + C.table(["K", "meaning weight", "meaning-only floor", "R@1", "R@2", "R@5", "R@10",
                   "cells below plain FTS5 (of 24)", ""], grid_rows)
        + "\n\n#### What a re-ordering can reach\n\n"
        f"Evidence inside the two gathers (the lexical top {deep.GATHER} and the meaning top {deep.GATHER}): "
        f"{fmt(within)}, so the best R@5 a re-ordering of them alone could reach is {fmt(ceiling)}, against the "
        f"shipped {fmt(f_all['r5'])}."
    )


def gathered(q: Question) -> frozenset[str]:
    return frozenset(q.lexical[:deep.GATHER]) | {i for i, _c in q.meaning[:deep.GATHER]}


def miss_cause(q: Question) -> str:
    """Which precision rule, if any, explains a miss (by re-running the question without it)."""
    if not q.ranked["quipu"]:
        if "floor" in q.quipu_reason or "left out" in q.quipu_reason:
            return "silent: below the floor"
        return f"silent: {q.quipu_reason}"
    if hit_at(q.ranked["quipu, floor off"], q.evidence, K):
        return "floor (hit when the floor is off)"
    if hit_at(q.ranked["quipu, all terms (no rarest-3)"], q.evidence, K):
        return "rarest-3 dropped a needed term"
    if hit_at(q.ranked["quipu, all terms, floor off"], q.evidence, K):
        return "rarest-3 and floor together"
    if not hit_at(q.ranked[DIAG_QUIPU_TERMS], q.evidence, K):
        return "term extraction (plain FTS5 with quipu's terms misses too)"
    return "scoring (plain FTS5 with quipu's terms finds it)"


if __name__ == "__main__":
    raise SystemExit(main())
