"""Silence and precision of the prompt hook on a realistic store, measured on real prompts.

Data, read at run time from ``<repo>/../shared/data/`` (``--data``; skipped with a message when
absent): ``memories-real/notes.jsonl`` (1,797 notes developers committed for their coding agents,
45 public repositories) and ``prompts-dev/*.jsonl`` (real developer prompts from public agent
chat logs, each with the assistant text before it). See testing/realistic.py.

Stores (one commit each, the example store's memories included):
- ``full``: every real note. The conversational sets meet it.
- ``foreign``: the real notes less those of the prompts' own authors (the prompts come from
  their projects), so it holds nothing for the topical prompts: any injection there is noise.
- ``team``: tests/fixtures/recall/ordinary_notes.json, 150 ordinary notes of a small product
  team (Django, React, Postgres, Kubernetes, CI...) written by the quipu team, plus the example
  store: a small store, where every word is rarer, full of the everyday vocabulary of the work.
- ``paired``: ``foreign`` plus one note per prompt of tests/fixtures/recall/paired_notes.json,
  written by the quipu team for that prompt in other words. **Optimistic**: the writer had read
  the prompt; the figure says whether a relevant note that exists is found, not how often one
  exists.

Prompt sets:
- conversational: tests/fixtures/recall/conversational.json and conversational_dev.json (the
  team's, by kind and language) and prompts-dev's conversational.jsonl (real); prompts-dev's
  borderline set is reported on its own line, outside the goal (it holds topic words).
- topical: prompts-dev's topical.jsonl on the ``foreign`` store (its assistant text as context).
- own project: the topical prompts that none of their author's notes answers, by the walks of
  bench/data/real_pairs*.json (which judged all 159), on the ``full`` store: its notes include
  those of the prompt's own repository. No goal: the judge's standard was strict (a note about
  the very thing the prompt asks), so an injection there is a note not judged relevant.

Each real note is a memory of its repository's project (``testing.realistic.project_dir``), and
each real prompt is typed in its own repository's folder, as the hook reads it from the event.

Systems, in the same run on the same stores:
- ``quipu``: ``quipu.prompt.recall.recall`` with the options the hook reads from the store, the
  prompt's preceding assistant text as context, exactly as the hook calls it; the conversational
  sets also go through the real hook process (``python -I -S hooks/prompt_submit.py``).
- ``today's rules``: the same call into quipu as of BASELINE_COMMIT (the rules before the
  evidence decision), extracted with ``git archive`` and run in a child process.
- ``plain FTS5``: one FTS5 row per memory (title, description, body; ``porter unicode61``), the
  OR of the prompt's quoted non-stop words, ``ORDER BY bm25()``, capped at two like the hook.

- ``held-out``: bench/data/heldout_pairs.json, 46 real notes of memories-real (by id; read from
  the data at run time) each with a prompt a developer would type when that note is what they
  need (abbreviations, questions inside longer prompts, not the note's title words), written
  before the rules were tuned and never used to tune them, on the ``full`` store. Less
  optimistic than ``paired``: the note was written by its project, not for the prompt.
  ``--pairs FILE`` reads another set in the same format instead (bench/data/heldout_pairs_2.json:
  60 more notes, drawn at random, prompts written without the hook's rules or results), or a set
  of real prompts of prompts-dev's topical set (by SHA-1) each with the real notes that answer it
  (bench/data/real_pairs.json; any of them in the top two counts).

Goals: conversational injections 0 (floor 2%); topical prompts with nothing relevant inject at
most 5%; the paired note in the top two for at least 95%.

Usage: python bench/bench_precision.py [--data DIR] [--pairs FILE] [--keep DIR] [--write-results] [--show N]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
from bench_locomo import baseline_terms  # noqa: E402

from quipu.prompt import recall  # noqa: E402
from quipu.prompt import indexread
from quipu.store.memory import Memory  # noqa: E402
from testing import realistic as R  # noqa: E402
from testing.fixtures import PROMPT_HOOK, example_memories  # noqa: E402

FIXTURES = C.REPO / "tests" / "fixtures" / "recall"
BASELINE_COMMIT = "0ece973"  # main before the evidence decision (the rules issue 10 replaces)
LIMIT = 2
QUIPU = "quipu"
TODAY = "today's rules"
PLAIN = "plain FTS5"
SYSTEMS = (QUIPU, TODAY, PLAIN)


class Case(NamedTuple):
    text: str
    context: str
    group: str   # the set's name
    kind: str    # subtype / kind
    lang: str
    target: str  # the paired note's id ("" when none)
    also: tuple[str, ...] = ()  # other notes that answer it as well (a real pair's copies)
    where: str = ""  # the folder it is typed in: its repository's (realistic.project_dir), "" when none

    def found(self, ids: Sequence[str]) -> bool:
        """Whether ``ids`` (a system's top few) hold the paired note or one of ``also``."""
        return self.target in ids or any(i in ids for i in self.also)


def conversational_cases(data: Path) -> list[Case]:
    cases = []
    for item in json.loads((FIXTURES / "conversational.json").read_text(encoding="utf-8"))["prompts"]:
        cases.append(Case(item["text"], "", "team: conversational.json", "follow-up", "en", ""))
    for item in json.loads((FIXTURES / "conversational_dev.json").read_text(encoding="utf-8"))["prompts"]:
        cases.append(Case(item["text"], "", "team: conversational_dev.json", item["kind"], item["lang"], ""))
    for p in R.real_prompts(data, "conversational"):
        cases.append(Case(p.text, p.previous, "prompts-dev: conversational", p.kind, p.lang, "",
                          where=R.project_dir(p.repo)))
    return cases


def borderline_cases(data: Path) -> list[Case]:
    return [Case(p.text, p.previous, "prompts-dev: borderline", p.kind, p.lang, "", where=R.project_dir(p.repo))
            for p in R.real_prompts(data, "conversational_borderline")]


def topical_cases(data: Path) -> list[Case]:
    return [Case(p.text, p.previous, "prompts-dev: topical", "topical", p.lang, "", where=R.project_dir(p.repo))
            for p in R.real_prompts(data, "topical")]


# The two walks of prompts-dev's topical prompts that judged each against its author's real notes:
# together they cover all 159; a prompt in neither was judged to have no note meeting the standard.
JUDGED = (C.REPO / "bench" / "data" / "real_pairs.json", C.REPO / "bench" / "data" / "real_pairs_2.json")


def own_project_cases(data: Path) -> list[Case]:
    """The topical prompts of prompts-dev that none of their author's real notes answers (by the
    judgement of the real pairs' walks, JUDGED), typed in their own repository: on the ``full``
    store, which holds that repository's notes, any injection is a note the judge did not find
    relevant."""
    paired = {p["prompt_sha1"] for path in JUDGED for p in json.loads(path.read_text(encoding="utf-8"))["pairs"]}
    return [c for c in topical_cases(data) if hashlib.sha1(c.text.encode("utf-8")).hexdigest() not in paired]


def team_memories() -> list[Memory]:
    notes = json.loads((FIXTURES / "ordinary_notes.json").read_text(encoding="utf-8"))["notes"]
    return [Memory.create({"id": n["id"], "title": n["title"], "class": n["class"], "topics": n.get("topics", []),
                           "created": R.CREATED}, n["body"].strip() + "\n") for n in notes]


HELDOUT_PAIRS = C.REPO / "bench" / "data" / "heldout_pairs.json"


def heldout_cases(data: Path, path: Path = HELDOUT_PAIRS) -> list[Case]:
    """The held-out pairs of ``path`` whose note is in the data (see the module's notes): a prompt
    written for a real note (``prompt``, ``note``), or a real prompt of prompts-dev's topical set
    named by its SHA-1 with the real notes that answer it (``prompt_sha1``, ``notes``), read with
    its preceding assistant text as the hook reads it."""
    pairs = json.loads(path.read_text(encoding="utf-8"))["pairs"]
    known = {R.note_id(n): n for n in R.real_notes(data)}
    real = {hashlib.sha1(p.text.encode("utf-8")).hexdigest(): p for p in R.real_prompts(data, "topical")}
    cases = []
    for p in pairs:
        if "prompt_sha1" in p:
            prompt, notes = real.get(p["prompt_sha1"]), [n for n in p["notes"] if n in known]
            if prompt is not None and notes:
                cases.append(Case(prompt.text, prompt.previous, "held-out", "held-out", prompt.lang, notes[0],
                                  tuple(notes[1:]), R.project_dir(prompt.repo)))
        elif p["note"] in known:  # typed in the project of the note it was written for
            cases.append(Case(p["prompt"], "", "held-out", "held-out", "en", p["note"],
                              where=R.project_dir(known[p["note"]].repo)))
    if len(cases) < len(pairs):
        print(f"bench_precision: {len(pairs) - len(cases)} of {len(pairs)} pairs of {path.name} name a note "
              "the data does not hold; left out", file=sys.stderr)
    return cases


def paired_notes(data: Path) -> tuple[list[Case], list[Memory]]:
    by_sha = {hashlib.sha1(p.text.encode("utf-8")).hexdigest(): p for p in R.real_prompts(data, "topical")}
    cases, notes = [], []
    for i, note in enumerate(json.loads((FIXTURES / "paired_notes.json").read_text(encoding="utf-8"))["notes"]):
        prompt = by_sha.get(note["prompt_sha1"])
        if prompt is None:
            continue
        mid = f"paired-{i:02d}"
        notes.append(Memory.create({"id": mid, "title": note["title"], "class": note["class"], "origin": "user",
                                    "created": R.CREATED}, note["body"].strip() + "\n"))
        cases.append(Case(prompt.text, prompt.previous, "paired", "paired", prompt.lang, mid,
                          where=R.project_dir(prompt.repo)))
    return cases, notes


# ------------------------------------------------------------------ systems


def run_quipu(db_path: Path, cases: Sequence[Case]) -> list[list[str]]:
    db = indexread.open_index(str(db_path))
    try:
        options = recall.Options.from_config(indexread.index_config(db))
        out = []
        for c in cases:
            options.cwd = c.where or None  # as the hook reads the folder from the event
            out.append([h.id for h in recall.recall(db, c.text, c.context, options).hits])
        return out
    finally:
        db.close()


_BASELINE_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from quipu import recall  # the baseline commit's flat layout
db = recall.open_index(sys.argv[2])
options = recall.Options.from_config(recall.index_config(db))
for line in sys.stdin:
    case = json.loads(line)
    print(json.dumps([h.id for h in recall.recall(db, case[0], case[1], options).hits]), flush=True)
"""


def baseline_package(scratch: Path) -> Path | None:
    """quipu as of BASELINE_COMMIT, extracted into ``scratch``; None when git cannot give it."""
    target = scratch / "baseline"
    if (target / "quipu" / "recall.py").is_file():
        return target
    archive = scratch / "baseline.tar"
    proc = subprocess.run(["git", "-C", str(C.REPO), "archive", "-o", str(archive), BASELINE_COMMIT, "quipu"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"bench_precision: today's rules skipped: git archive {BASELINE_COMMIT}: {proc.stderr.strip()}",
              file=sys.stderr)
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


def run_baseline(package: Path, db_path: Path, cases: Sequence[Case]) -> list[list[str]]:
    data = "".join(json.dumps([c.text, c.context]) + "\n" for c in cases)
    proc = subprocess.run([C.REAL_PYTHON, "-I", "-c", _BASELINE_CHILD, str(package), str(db_path)],
                          input=data, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


class PlainFts:
    """One FTS5 row per memory, the OR of the prompt's quoted words, the best two by bm25()."""

    COLUMNS = "title, description, body"  # the memory's fields, joined into the one row

    def __init__(self, db_path: Path) -> None:
        source = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        rows = source.execute(f"SELECT id, {self.COLUMNS} FROM memories").fetchall()
        source.close()
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='porter unicode61')")
        self.db.executemany("INSERT INTO t VALUES (?, ?)", [(r[0], " ".join(x or "" for x in r[1:])) for r in rows])

    def search(self, text: str) -> list[str]:
        return self.search_depth(text, LIMIT)

    def search_depth(self, text: str, depth: int) -> list[str]:
        terms = baseline_terms(text)[:200]
        if not terms:
            return []
        expr = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        return [r[0] for r in self.db.execute("SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?",
                                              (expr, depth))]


def run_plain(db_path: Path, cases: Sequence[Case]) -> list[list[str]]:
    fts = PlainFts(db_path)
    return [fts.search(c.text) for c in cases]


def run_hook(root: Path, cases: Sequence[Case], env: dict[str, str]) -> list[bool]:
    """Whether the real hook process printed anything for each case (no transcript)."""
    out = []
    for n, case in enumerate(cases):
        event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": f"bench-{n}",
                            "transcript_path": "", "cwd": str(root), "prompt": case.text})
        proc = subprocess.run([C.REAL_PYTHON, "-I", "-S", str(PROMPT_HOOK)], input=event.encode(),
                              capture_output=True, env={**env, "QUIPU_STORE": str(root)}, timeout=60)
        out.append(bool(proc.stdout.strip()))
    return out


# ------------------------------------------------------------------ the run


def pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100.0 * n / d:.1f}%)" if d else "0/0"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, help="the shared data folder (default ../shared/data beside the repository)")
    p.add_argument("--pairs", type=Path, default=HELDOUT_PAIRS, metavar="FILE",
                   help="the held-out pairs to measure (default bench/data/heldout_pairs.json)")
    p.add_argument("--keep", metavar="DIR", help="build the stores in DIR and keep them (reused when present)")
    p.add_argument("--show", type=int, default=8, help="injections on foreign topical prompts to list")
    p.add_argument("--write-results", action="store_true", help="update the bench_precision section of bench/RESULTS.md")
    args = p.parse_args(argv)
    if args.data:
        os.environ["QUIPU_SHARED_DATA"] = str(args.data)
    data = R.data_dir()
    if data is None:
        print(f"bench_precision: skipped: {R.MISSING_DATA}", file=sys.stderr)
        return 0
    machine = C.machine()
    scratch = C.scratch_dir(args.keep, "bench-precision")
    env = C.isolate(scratch)
    C.compile_quipu()  # timed quipu processes read bytecode, as installed from a wheel
    try:
        return _run(args, data, scratch, env, machine)
    finally:
        C.cleanup(scratch, args.keep)


def _store(scratch: Path, name: str, notes: list[R.Note], exclude: Sequence[str], extra: Sequence[Memory]) -> Path:
    root = scratch / f"store-{name}"
    db = root / ".cache" / "index.sqlite"
    if not db.is_file():
        R.realistic_store(root, notes, exclude, extra)
    return root


def _run(args: argparse.Namespace, data: Path, scratch: Path, env: dict[str, str], machine: str) -> int:
    start = time.perf_counter()
    notes = R.real_notes(data)
    conversational, borderline, topical = conversational_cases(data), borderline_cases(data), topical_cases(data)
    paired, paired_memories = paired_notes(data)
    heldout = heldout_cases(data, args.pairs)
    own = own_project_cases(data)
    authors = sorted({p.owner for p in R.real_prompts(data, "topical")})
    full = _store(scratch, "full", notes, (), ())
    foreign = _store(scratch, "foreign", notes, authors, ())
    with_pairs = _store(scratch, "paired", notes, authors, paired_memories)
    team = _store(scratch, "team", [], (), team_memories())
    sizes = {name: len(R.realistic_memories(notes, excl)) + len(example_memories()) + extra
             for name, excl, extra in (("full", (), 0), ("foreign", authors, 0), ("paired", authors, len(paired)))}
    sizes["team"] = len(team_memories()) + len(example_memories())
    build_s = time.perf_counter() - start
    package = baseline_package(scratch)
    runs: dict[str, dict[str, list[list[str]]]] = defaultdict(dict)
    jobs = (("conversational", full, conversational), ("borderline", full, borderline),
            ("topical", foreign, topical), ("paired", with_pairs, paired), ("held-out", full, heldout),
            ("team conversational", team, conversational), ("team topical", team, topical), ("own project", full, own))
    for set_name, root, cases in jobs:
        db_path = root / ".cache" / "index.sqlite"
        runs[QUIPU][set_name] = run_quipu(db_path, cases)
        if package is not None:
            runs[TODAY][set_name] = run_baseline(package, db_path, cases)
        runs[PLAIN][set_name] = run_plain(db_path, cases)
    hook_fired = run_hook(full, conversational, env)
    systems = [s for s in SYSTEMS if s in runs]

    lines = []
    lines.append(
        f"Stores: `full` {sizes['full']:,} memories ({len(notes):,} real notes of memories-real plus the example store), "
        f"`foreign` {sizes['foreign']:,} (without the notes of the prompts' authors: {', '.join(authors)}), "
        f"`paired` {sizes['paired']:,} (`foreign` plus {len(paired)} paired notes), `team` {sizes['team']:,} "
        f"(150 ordinary notes of a small team plus the example store). Built in {build_s:.1f} s.\n"
    )
    lines.append("#### Goals\n")
    rows = []
    for system in systems:
        conv = runs[system]["conversational"]
        fired = sum(1 for ids in conv if ids)
        top = runs[system]["topical"]
        topical_fired = sum(1 for ids in top if ids)
        pair_hits = sum(1 for c, ids in zip(paired, runs[system]["paired"], strict=True) if c.found(ids[:LIMIT]))
        border = sum(1 for ids in runs[system]["borderline"] if ids)
        held = sum(1 for c, ids in zip(heldout, runs[system]["held-out"], strict=True) if c.found(ids[:LIMIT]))
        own_fired = sum(1 for ids in runs[system]["own project"] if ids)
        rows.append((system, pct(fired, len(conv)), pct(topical_fired, len(top)),
                     f"{sum(len(i) for i in top)}", pct(pair_hits, len(paired)), pct(held, len(heldout)),
                     pct(border, len(borderline)), pct(own_fired, len(own))))
    lines.append(C.table(("system", "conversational that inject (goal 0, floor 2%)",
                          "topical, nothing relevant, that inject (goal <= 5%)", "memories injected there",
                          "paired note in the top two (goal >= 95%)", f"held-out real note in the top two ({args.pairs.name}, no goal)",
                          "borderline that inject (no goal)",
                          "topical in its own project, nothing judged relevant, that inject (no goal)"), rows))
    rows = []
    for system in systems:
        conv = runs[system]["team conversational"]
        top = runs[system]["team topical"]
        rows.append((system, pct(sum(1 for ids in conv if ids), len(conv)), pct(sum(1 for ids in top if ids), len(top))))
    lines.append("\nOn the small `team` store (the same goals):\n")
    lines.append(C.table(("system", "conversational that inject", "topical prompts of other projects that inject"), rows))
    lines.append(f"\nThe real hook process (`python -I -S hooks/prompt_submit.py`) on the conversational sets: "
                 f"{sum(hook_fired)} of {len(hook_fired)} printed anything.\n")

    lines.append("#### Conversational prompts by set, kind and language (injecting / all)\n")
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for n, case in enumerate(conversational):
        groups[(case.group, case.kind, case.lang)].append(n)
    rows = []
    for key in sorted(groups):
        members = groups[key]
        rows.append((*key, len(members), *(sum(1 for n in members if runs[s]["conversational"][n]) for s in systems)))
    lines.append(C.table(("set", "kind", "language", "prompts", *systems), rows))

    lines.append("\n#### Topical prompts, by kind (injecting / all)\n")
    by_kind: dict[str, list[int]] = defaultdict(list)
    for n, prompt in enumerate(R.real_prompts(data, "topical")):
        for kind in prompt.kinds or ("?",):
            by_kind[kind].append(n)
    rows = [(kind, len(ns), *(sum(1 for n in ns if runs[s]["topical"][n]) for s in systems))
            for kind, ns in sorted(by_kind.items())]
    lines.append(C.table(("kind", "prompts", *systems), rows))

    lines += _injections("quipu's injections on topical prompts whose store holds nothing for them (read them to judge)",
                         topical, runs[QUIPU]["topical"], foreign, args.show)
    lines += _injections("quipu's injections on topical prompts in their own project with no note judged relevant "
                         "(the `full` store; read them to judge)", own, runs[QUIPU]["own project"], full, args.show)
    missed = [case.target for case, ids in zip(paired, runs[QUIPU]["paired"], strict=True) if not case.found(ids[:LIMIT])]
    lines.append(f"\nPaired notes quipu left out of the top two: {', '.join(missed) or 'none'}.")
    held_missed = [case.target for case, ids in zip(heldout, runs[QUIPU]["held-out"], strict=True)
                   if not case.found(ids[:LIMIT])]
    lines.append(f"\nHeld-out notes ({args.pairs.name}) quipu left out of the top two: {', '.join(held_missed) or 'none'}.")
    body = "\n".join(lines)
    print(body)
    if args.write_results:
        C.update_results("bench_precision", "Silence and precision on a realistic store (issue 10): bench/bench_precision.py",
                         body, command=C.command_line(), machine_line=machine)
    return 0


def _injections(heading: str, cases: Sequence[Case], hits: Sequence[list[str]], root: Path, show: int) -> list[str]:
    """Lines listing the first ``show`` cases that injected, each with the titles of what it got."""
    shown = [(case, ids) for case, ids in zip(cases, hits, strict=True) if ids][:show]
    if not shown:
        return []
    titles = _titles(root)
    return [f"\n{heading}:\n"] + [
        f"- \"{' '.join(case.text.split())[:110]}…\" → " + "; ".join(f"`{i}` {titles.get(i, '')[:60]}" for i in ids)
        for case, ids in shown]


def _titles(root: Path) -> dict[str, str]:
    db = sqlite3.connect(f"file:{root / '.cache' / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT id, title FROM memories").fetchall())
    finally:
        db.close()


if __name__ == "__main__":
    raise SystemExit(main())
