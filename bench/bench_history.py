"""Past conversations (`quipu history`): backfill, append and search cost, and LoCoMo recall.

Data: ``<repo>/../shared/data/locomo/locomo10.json`` (CC BY-NC 4.0, read at run time, never copied
into this repository). Every LoCoMo session becomes one Claude Code transcript (JSONL in Claude
Code's format: envelopes with uuid, sessionId, cwd, gitBranch, timestamp; the conversation's first
speaker is the person, the second the assistant), one project folder per conversation.

Parts:
1. Backfill: a corpus of exactly ``--turns`` turns (default 71,062, the article's count) made by
   repeating the 5,882 LoCoMo turns in copies (each copy its own projects and session ids),
   archived and indexed with vectors by one fresh `quipu history index` process, alternated over
   rounds with a plain process that reads the same JSON lines into SQLite with FTS5 in one
   transaction (``PLAIN_BACKFILL``). Goal: median wall time <= 3x the plain baseline's. Beside it,
   in the same run: the median CPU time (user and system) of each, steadier on a shared machine,
   and the static embedding alone over the same texts, in process.
2. Append: one new 200-turn session into that archive, as the SessionEnd worker does it
   (`quipu history append` as a fresh process, and the library call in process). Goal <= 0.3 s.
3. Search: `quipu history search` as a fresh process over ``--search-turns`` (default 100,000)
   turns, p50 of varied LoCoMo questions, interleaved with `python -c "import numpy"` runs of the
   same interpreter. Goal p50 <= 2x that baseline.
4. Recall: every LoCoMo question through the history search of its conversation's project
   (`--project`), R@5 and R@10 of its evidence turns, beside plain FTS5 over the same turns (one
   row per turn, OR of the question's non-stop words, bm25) in the same run; also words only,
   meaning only, and the fusion constants around the chosen ones.

Usage: python bench/bench_history.py [--turns N] [--search-turns N] [--runs N] [--skip-size] [--write-results]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import bench_locomo as L  # noqa: E402

from quipu.history import feed, index, search  # noqa: E402,F401
from quipu.index import embed  # noqa: E402
from quipu.history.archive import Layout  # noqa: E402

PYTHON = sys.executable  # the interpreter quipu is installed for (numpy and wordllama are its packages)


def slug(cwd: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in cwd)


def sessions_of(data: list[dict[str, object]]) -> list[tuple[str, int, dt.datetime, list[dict[str, str]]]]:
    """(conversation, session number, start, items) for every LoCoMo session, in order."""
    out = []
    for sample in data:
        conv = str(sample["sample_id"])
        c = sample["conversation"]
        assert isinstance(c, dict)
        for key, value in c.items():
            m = re.fullmatch(r"session_(\d+)", key)
            if m and isinstance(value, list):
                start = dt.datetime.strptime(c[f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
                out.append((conv, int(m.group(1)), start.replace(tzinfo=dt.timezone.utc), value))
    return out


def turn_text(item: dict[str, str]) -> str:
    """The turn as bench_locomo's memories and plain FTS5 rows have it: "<speaker>: <text>"."""
    text = f"{item['speaker']}: {item['text']}"
    if item.get("blip_caption"):
        text += f" [image: {item['blip_caption']}]"
    return text


def write_corpus(root: Path, data: list[dict[str, object]], total: int | None) -> tuple[int, dict[str, str]]:
    """Transcripts under ``root`` (a projects folder): ``total`` turns (all of LoCoMo once when
    None). Returns (turns written, archive key -> bench_locomo memory id) for the first copy."""
    sessions = sessions_of(data)
    written = 0
    keys: dict[str, str] = {}
    copy = 0
    while total is None or written < total:
        for conv, number, start, items in sessions:
            if total is not None and written >= total:
                break
            cwd = f"/home/bench/{conv}" + (f"-copy{copy}" if copy else "")
            sid = f"{copy:04d}{abs(hash(conv)) % 10_000:04d}-{number:04d}-4000-8000-{copy:012d}"
            speakers = list(dict.fromkeys(i["speaker"] for i in items))
            lines = []
            parent = None
            for n, item in enumerate(items):
                if total is not None and written >= total:
                    break
                role = "user" if item["speaker"] == speakers[0] else "assistant"
                uuid = f"{conv}-c{copy}-{item['dia_id'].strip()}"
                ts = (start + dt.timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
                record = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                          "sessionId": sid, "version": "2.1.168", "gitBranch": "main", "type": role, "uuid": uuid,
                          "timestamp": ts}
                if role == "user":
                    record.update(message={"role": "user", "content": turn_text(item)}, promptSource="typed")
                else:
                    record.update(message={"id": f"msg_{uuid}", "role": "assistant", "model": "claude-sonnet-5",
                                           "content": [{"type": "text", "text": turn_text(item)}]})
                lines.append(json.dumps(record))
                parent = uuid
                written += 1
                if copy == 0:
                    m = L._EVIDENCE.fullmatch(item["dia_id"].strip())
                    if m:
                        keys[f"{sid}/{uuid}"] = L.memory_id(conv, int(m.group(1)), int(m.group(2)))
            folder = root / slug(cwd)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if total is None:
            break
        copy += 1
    return written, keys


def run_cli(env: dict[str, str], *args: str) -> tuple[float, int]:
    wall, _rss, code = C.spawn_timed([PYTHON, "-m", "quipu", *args], env=env)
    if code != 0:
        raise SystemExit(f"quipu {' '.join(args)} exited {code}")
    return wall, code


# The floor for a backfill: one plain process that reads every transcript's JSON lines and puts
# each turn's text in a SQLite table with a full-text index, in one transaction.
PLAIN_BACKFILL = """
import json, pathlib, sqlite3, sys
db = sqlite3.connect(sys.argv[2])
db.execute("CREATE TABLE turns(id INTEGER PRIMARY KEY, session TEXT, role TEXT, ts TEXT, text TEXT)")
db.execute("CREATE VIRTUAL TABLE turns_fts USING fts5(text, content='turns', content_rowid='id')")
rows = []
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.jsonl")):
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        c = r["message"]["content"]
        rows.append((r["sessionId"], r["type"], r["timestamp"], c if isinstance(c, str) else c[0]["text"]))
with db:
    db.executemany("INSERT INTO turns(session, role, ts, text) VALUES (?, ?, ?, ?)", rows)
    db.execute("INSERT INTO turns_fts(turns_fts) VALUES ('rebuild')")
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """One process: (wall, user CPU, system CPU) seconds."""
    start = time.perf_counter()
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]  # as C.spawn_timed: no terminal, no bar
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _pid, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:4])} exited {os.waitstatus_to_exitcode(status)}")
    return time.perf_counter() - start, usage.ru_utime, usage.ru_stime


def part_backfill(scratch: Path, data: list[dict[str, object]], turns: int, env: dict[str, str],
                  rounds: int = 3) -> dict[str, object]:
    """`quipu history index` of ``turns`` turns in fresh homes, alternated with the plain baseline;
    wall time (the goal) and CPU time (steadier on a shared machine) of each."""
    projects = scratch / "p71" / "projects"
    written, _keys = write_corpus(projects, data, turns)
    walls, plains, cpus, plain_cpus, systems = [], [], [], [], []
    home = scratch / "h71-0"
    for r in range(rounds):
        home = scratch / f"h71-{r}"
        plain = [PYTHON, "-c", PLAIN_BACKFILL, str(projects), str(scratch / f"plain-{r}.sqlite")]
        quipu = [PYTHON, "-m", "quipu", "history", "index", "--projects", str(projects), "--json"]
        for kind in ("plain", "quipu") if r % 2 else ("quipu", "plain"):
            wall, user, system = timed(plain if kind == "plain" else quipu,
                                       env if kind == "plain" else {**env, "QUIPU_HOME": str(home)})
            (plains if kind == "plain" else walls).append(wall)
            (plain_cpus if kind == "plain" else cpus).append(user + system)
            if kind == "quipu":
                systems.append(system)
    # Removed only now: thousands of files deleted just before a round make the file system look
    # long for free inodes while that round creates its own (ext4 skips recently freed ones).
    for r in range(rounds - 1):
        C.cleanup(scratch / f"h71-{r}", None)
    texts = [t for t in (json.loads(line)["message"]["content"] for p in sorted(projects.rglob("*.jsonl"))
                          for line in p.read_text().splitlines())]
    texts = [t if isinstance(t, str) else t[0]["text"] for t in texts]
    files = embed.locate()
    assert files is not None
    start = time.perf_counter()
    embed.Embedder.load(files, bulk=True).many(texts)
    embed_s = time.perf_counter() - start
    db = index.connect(Layout(home / "history").index)
    indexed = int(db.execute("SELECT count(*) FROM turns").fetchone()[0])
    db.close()
    size = sum(p.stat().st_size for p in (home / "history").rglob("*") if p.is_file())
    return {"turns": written, "indexed": indexed, "wall": C.median(walls), "walls": walls, "plain": C.median(plains),
            "plains": plains, "cpu": C.median(cpus), "plain_cpu": C.median(plain_cpus), "system": C.median(systems),
            "embed": embed_s,
            "bytes": size, "home": home}


def part_append(scratch: Path, data: list[dict[str, object]], home: Path, env: dict[str, str],
                runs: int) -> dict[str, float]:
    sessions = [s for s in sessions_of(data) if len(s[3]) >= 20]
    proc, lib = [], []
    for r in range(runs * 2):
        t = scratch / f"append{r}.jsonl"
        lines = []
        sid = f"a9900000-0000-4000-8000-{r:012d}"
        n = 0
        for _conv, _number, start, items in sessions[r::7]:
            for item in items:
                if n >= 200:
                    break
                role = "user" if n % 2 == 0 else "assistant"
                content: object = turn_text(item) if role == "user" else [{"type": "text", "text": turn_text(item)}]
                lines.append(json.dumps({"type": role, "uuid": f"ap{r}-{n}", "sessionId": sid, "cwd": "/home/bench/new",
                                         "timestamp": (start + dt.timedelta(minutes=n)).isoformat(),
                                         "promptSource": "typed", "message": {"role": role, "content": content}}))
                n += 1
            if n >= 200:
                break
        t.write_text("\n".join(lines) + "\n")
        if r % 2 == 0:
            wall, _ = run_cli({**env, "QUIPU_HOME": str(home)}, "history", "append", "--transcript", str(t))
            proc.append(wall)
        else:
            os.environ["QUIPU_HOME"] = str(home)
            start_t = time.perf_counter()
            summary = feed.append_transcript(t, layout=Layout(home / "history"))
            lib.append(time.perf_counter() - start_t)
            assert summary.added == 200, summary
    numpy_runs = [C.spawn_timed([PYTHON, "-c", "import numpy"], env=env)[0] for _ in range(runs)]
    return {"process": C.median(proc), "library": C.median(lib), "numpy": C.median(numpy_runs)}


def part_search(scratch: Path, data: list[dict[str, object]], turns: int, env: dict[str, str], runs: int,
                questions: list[str]) -> dict[str, object]:
    projects = scratch / "p100" / "projects"
    written, _ = write_corpus(projects, data, turns)
    home = scratch / "h100"
    penv = {**env, "QUIPU_HOME": str(home)}
    backfill, _ = run_cli(penv, "history", "index", "--projects", str(projects), "--json")
    run_cli(penv, "history", "search", "warm up the page cache")
    quipu_t, numpy_t, bare_t, project_t = [], [], [], []
    for i in range(runs):
        q = questions[(i * 37) % len(questions)]
        quipu_t.append(C.spawn_timed([PYTHON, "-m", "quipu", "history", "search", q, "--json"], env=penv)[0])
        project_t.append(C.spawn_timed([PYTHON, "-m", "quipu", "history", "search", q, "--json", "--project",
                                        "/home/bench/conv-26"], env=penv)[0])
        numpy_t.append(C.spawn_timed([PYTHON, "-c", "import numpy"], env=penv)[0])
        bare_t.append(C.spawn_timed([PYTHON, "-c", "pass"], env=penv)[0])
    shutil.rmtree(projects)
    return {"turns": written, "backfill": backfill, "quipu": C.median(quipu_t), "numpy": C.median(numpy_t),
            "bare": C.median(bare_t), "p90": C.percentile(quipu_t, 90), "project": C.median(project_t)}


def part_recall(scratch: Path, data: list[dict[str, object]]) -> dict[str, object]:
    projects = scratch / "pl" / "projects"
    _written, keys = write_corpus(projects, data, None)
    home = scratch / "hl"
    os.environ["QUIPU_HOME"] = str(home)
    layout = Layout(home / "history")
    feed.backfill(projects, layout=layout)
    db = index.connect(layout.index)
    rowid_to_mid = {int(r[0]): keys.get(r[1]) for r in db.execute("SELECT id, key FROM turns")}
    convs = L.load(L.DEFAULT_DATA)
    grid = [(k, w) for k in (10.0, 60.0) for w in (0.1, 0.2, 0.3, 0.5, 1.0)]
    systems: dict[str, list[tuple[float, float]]] = {"plain FTS5": [], "history, words only": [],
                                                     "history, meaning only": [], "history, fused": [],
                                                     "words, then meaning": []}
    for k, w in grid:
        systems[f"fused k={k:g} w={w:g}"] = []
    per_cat: dict[str, dict[int, list[float]]] = {"plain FTS5": {}, "history, fused": {}}
    # Plain FTS5 over the whole archive's turns at once, filtered to the conversation: the same
    # corpus-wide term statistics the history index has (per conversation, rare words are rarer).
    everything = sqlite3.connect(":memory:")
    everything.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, conv UNINDEXED, body, tokenize='porter unicode61')")
    everything.executemany("INSERT INTO t VALUES (?, ?, ?)", [(t.memory_id, c, t.text) for c, ts, _q in convs for t in ts])
    systems["plain FTS5, all conversations in one table"] = []
    for conv, turns, questions in convs:
        plain = L.PlainFts(turns)
        for q in questions:
            found = search.gather(db, layout, q.text, project=f"/home/bench/{conv}")
            mids = lambda ids: [rowid_to_mid.get(i) for i in ids]  # noqa: E731
            ranked = {
                "plain FTS5": plain.search(q.text, 10),
                "history, words only": mids(found.lexical),
                "history, meaning only": mids(found.meaning or []),
                "history, fused": mids([i for i, *_ in search.fuse(found.lexical, found.meaning)]),
            }
            ranked["words, then meaning"] = mids(found.lexical + [i for i in found.meaning or [] if i not in found.lexical])
            terms = L.baseline_terms(q.text)
            ranked["plain FTS5, all conversations in one table"] = [r[0] for r in everything.execute(
                "SELECT id FROM t WHERE t MATCH ? AND conv = ? ORDER BY bm25(t) LIMIT 10",
                (" OR ".join(L._quote(t) for t in terms), conv))] if terms else []
            for k, w in grid:
                ranked[f"fused k={k:g} w={w:g}"] = mids([i for i, *_ in search.fuse(
                    found.lexical, found.meaning, k=k, meaning_weight=w)])
            for name, ids in ranked.items():
                clean = [i for i in ids if i]
                systems[name].append((L.recall_at(clean, q.evidence, 5), L.recall_at(clean, q.evidence, 10)))
                if name in per_cat:
                    per_cat[name].setdefault(q.category, []).append(L.recall_at(clean, q.evidence, 5))
    db.close()
    return {"systems": {n: (sum(a for a, _ in v) / len(v), sum(b for _, b in v) / len(v), len(v))
                        for n, v in systems.items()},
            "per_cat": {n: {c: sum(v) / len(v) for c, v in sorted(cats.items())} for n, cats in per_cat.items()}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=L.DEFAULT_DATA)
    p.add_argument("--turns", type=int, default=71_062)
    p.add_argument("--search-turns", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--skip-size", action="store_true", help="only the LoCoMo recall part")
    p.add_argument("--backfill-only", action="store_true", help="only the backfill against its plain baseline")
    p.add_argument("--keep", help="keep the scratch folder here")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    if not args.data.is_file():
        print(f"bench: no LoCoMo data at {args.data}; skipped", file=sys.stderr)
        return 0
    data = json.loads(args.data.read_text(encoding="utf-8"))
    scratch = C.scratch_dir(args.keep, "quipu-bench-history-")
    env = C.isolate(scratch)
    env["PYTHONPATH"] = str(C.REPO)
    machine = C.machine()
    questions = [q.text for _c, _t, qs in L.load(args.data) for q in qs]
    body = []
    try:
        if not args.skip_size:
            b = part_backfill(scratch, data, args.turns, env)
            print("backfill", b, file=sys.stderr)
            ratio = b["wall"] / b["plain"]  # type: ignore[operator]
            print(f"backfill: {ratio:.1f}x the plain JSON-to-SQLite baseline; quipu {b['wall']:.2f} s "
                  f"(rounds {b['walls']}), plain {b['plain']:.2f} s (rounds {b['plains']}); goal <= 3x: "
                  + ("met" if ratio <= 3 else "NOT met")
                  + f"; CPU time {b['cpu'] / b['plain_cpu']:.1f}x ({b['cpu']:.2f} s, {b['system']:.2f} s of it in the "  # type: ignore[operator]
                  f"system, against {b['plain_cpu']:.2f} s); "
                  f"the embedding alone, in process: {b['embed']:.2f} s; load average {os.getloadavg()[0]:.1f}")
            if args.backfill_only:
                return 0
            a = part_append(scratch, data, b["home"], env, max(3, args.runs // 3))  # type: ignore[arg-type]
            print("append", a, file=sys.stderr)
            s = part_search(scratch, data, args.search_turns, env, args.runs, questions)
            print("search", s, file=sys.stderr)
            body += [
                "### Cost (fresh processes of the installed interpreter; medians)",
                "",
                C.table(["what", "measured", "baseline in the same run", "goal", "status"], [
                    [f"backfill of {b['turns']:,} turns (LoCoMo repeated, {b['indexed']:,} indexed) with vectors: "
                     "`quipu history index`", f"{b['wall']:.2f} s = {ratio:.1f}x",
                     f"plain JSON-to-SQLite process {b['plain']:.2f} s; embedding alone, in process: "
                     f"{b['embed']:.2f} s", "<= 3x", "met" if ratio <= 3 else "not met"],
                    ["append one 200-turn session into that archive: `quipu history append` process",
                     f"{a['process'] * 1000:.0f} ms", f"`python -c \"import numpy\"` {a['numpy'] * 1000:.0f} ms",
                     "<= 0.3 s", "met" if a["process"] <= 0.3 else "not met"],
                    ["the same append as a library call (what the worker does after its start)",
                     f"{a['library'] * 1000:.0f} ms", "", "", ""],
                    [f"`quipu history search` over {s['turns']:,} turns, p50 (p90 {s['p90'] * 1000:.0f} ms)",
                     f"{s['quipu'] * 1000:.0f} ms = {s['quipu'] / s['numpy']:.2f}x",  # type: ignore[operator]
                     f"`python -c \"import numpy\"` {s['numpy'] * 1000:.0f} ms; `-c pass` {s['bare'] * 1000:.0f} ms",
                     "<= 2x", "met" if s["quipu"] <= 2 * s["numpy"] else "not met"],  # type: ignore[operator]
                    ["the same with `--project` (one of 170 project folders: that folder's word statistics)",
                     f"{s['project'] * 1000:.0f} ms = {s['project'] / s['numpy']:.2f}x", "", "", ""],  # type: ignore[operator]
                    [f"backfill of {s['turns']:,} turns", f"{s['backfill']:.2f} s", "", "", ""],
                ]),
                "",
                f"Archive and index of {b['turns']:,} turns on disk: {b['bytes'] / 2**20:.0f} MiB "
                "(vectors are 16-bit integers with a scale, 516 bytes a turn).",
                "",
            ]
        r = part_recall(scratch, data)
        print(json.dumps(r, indent=1), file=sys.stderr)
        rows = [[name, f"{r5:.4f}", f"{r10:.4f}", n] for name, (r5, r10, n) in r["systems"].items()]  # type: ignore[union-attr]
        body += [
            "### LoCoMo evidence recall through the history search (each question within its conversation's project)",
            "",
            C.table(["system", "R@5", "R@10", "questions"], rows),
            "",
            "R@5 per category:",
            "",
            C.table(["system", *[L.CATEGORIES[c] for c in sorted(next(iter(r["per_cat"].values())))]],  # type: ignore[union-attr]
                    [[n, *[f"{v:.3f}" for v in cats.values()]] for n, cats in r["per_cat"].items()]),  # type: ignore[union-attr]
            "",
            "Memory-store figures to compare (issue 15's starting point, same data): quipu recall R@5 0.5497 / "
            "R@10 0.6195; its goal for the fused deep list is R@5 >= 0.70.",
        ]
        for line in body:
            print(line)
        if args.write_results:
            C.update_results("bench_history", "Past conversations (issue 16): bench/bench_history.py", "\n".join(body),
                             command=C.command_line(), machine_line=machine)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
