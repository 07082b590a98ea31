"""Benchmark of the prompt hook against the size of its input: prompts of 1 KB, 100 KB and 1 MB.

Each size comes in three shapes: plain text whose topic is at its end (a pasted trace), the same
text with every letter written as a ``\\u00XX`` JSON escape, and text with no topic of its own
(random words). The hook runs exactly as Claude Code starts it (``<real python> -I -S
hooks/prompt_submit.py``, the event on stdin) against a store of 1,000 memories of real text (bench/realtext.py: real notes and LoCoMo turns,
read at run time), beside
``<real python> -I -S -c pass``; every round runs every command once, in an order rotated each
round, so all share the machine's noise. Outputs are checked: a prompt with a topic must inject
the target memory.

Goal: a 1 MB prompt costs at most 5x a 1 KB prompt of the same shape (p50 wall time).

Agents: the same 1 KB question as Claude Code sends it (its transcript beside it) and as Codex CLI
sends it (its rollout file beside it, the same 60 turns with tool output in each format), timed in
the same rounds against the same store. Goal: Codex's costs the same as Claude Code's (p50 ratio
within 1.10).

Usage: python bench/bench_hook_input.py [--rounds 15] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from quipu.index import index  # noqa: E402
from quipu.store.store import Store  # noqa: E402
from testing import realistic as R  # noqa: E402

import realtext  # noqa: E402

HOOK = C.REPO / "hooks" / "prompt_submit.py"
SIZES = {"1 KB": 1_000, "100 KB": 100_000, "1 MB": 990_000}  # the hook ignores events over 1,000,000 bytes
GOAL_RATIO = 5.0
AGENT_GOAL = 1.10
TURNS = 60


def agent_events(scratch: Path, root: Path, question: str) -> dict[tuple[str, str], str]:
    """{(agent, "1 KB + transcript"): event JSON}: one question, each agent's own event and session file."""
    claude, codex = scratch / "claude-session.jsonl", scratch / "rollout-2026-01-01T00-00-00-0000.jsonl"
    sid = "01a242dd-3aa1-7e33-b42e-87afd72e25b4"
    claude_lines, codex_lines = [], [json.dumps({"type": "session_meta", "payload": {"id": sid, "cwd": str(root),
                                                                                    "source": "cli"}})]
    for n in range(TURNS):
        ask, reply, output = f"step {n}: look at the billing module", f"Looked at step {n}.", "x" * 4000
        claude_lines += [
            json.dumps({"type": "user", "sessionId": sid, "uuid": f"u{n}", "message": {"role": "user", "content": ask}}),
            json.dumps({"type": "assistant", "uuid": f"a{n}", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}]}}),
            json.dumps({"type": "user", "uuid": f"r{n}", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{n}", "content": output}]}}),
            json.dumps({"type": "assistant", "uuid": f"b{n}", "message": {"role": "assistant", "content": [
                {"type": "text", "text": reply}]}})]
        codex_lines += [
            json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": {
                "type": "UserMessage", "id": f"u{n}", "content": [{"type": "text", "text": ask}]}}}),
            json.dumps({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": ask}]}}),
            json.dumps({"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                                             "arguments": '{"cmd": "ls"}', "call_id": f"c{n}"}}),
            json.dumps({"type": "response_item", "payload": {"type": "function_call_output", "call_id": f"c{n}",
                                                             "output": output}}),
            json.dumps({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": reply}]}})]
    claude.write_text("".join(line.replace(", ", ",").replace(": ", ":") + "\n" for line in claude_lines))
    codex.write_text("".join(line.replace(", ", ",").replace(": ", ":") + "\n" for line in codex_lines))
    base = {"session_id": "", "cwd": str(root), "hook_event_name": "UserPromptSubmit", "prompt": question}
    return {
        ("claude", "1 KB + transcript"): json.dumps({**base, "transcript_path": str(claude)}),
        ("codex", "1 KB + transcript"): json.dumps({**base, "transcript_path": str(codex), "turn_id": sid,
                                                   "model": "gpt-5", "permission_mode": "default"}),
    }


def _escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if c.isalpha() else json.dumps(c)[1:-1] for c in text)


def events(root: Path, question: str, rng: random.Random) -> dict[tuple[str, str], str]:
    """{(shape, size): event JSON}: each event's length is about its size."""
    out = {}
    for name, size in SIZES.items():
        base = {"session_id": "", "cwd": str(root), "hook_event_name": "UserPromptSubmit", "prompt": ""}
        envelope = len(json.dumps(base))
        filler_words = [rng.choice(["lorem", "ipsum", "dolor", "amet", "consectetur", "adipiscing"]) for _ in range(size)]
        filler = " ".join(filler_words)
        plain = filler[: max(0, size - envelope - len(question) - 1)] + " " + question
        out[("plain", name)] = json.dumps({**base, "prompt": plain})
        escaped_prompt = filler[: max(0, (size - envelope) // 6 - len(question))] + " " + question
        out[("escaped", name)] = json.dumps({**base, "prompt": ""}).replace('"prompt": ""', '"prompt": "' + _escaped(escaped_prompt) + '"')
        out[("no topic", name)] = json.dumps({**base, "prompt": filler[: size - envelope]})
    return out


def _cases(scratch: Path, root: Path, env: dict[str, str], memories: list[Any]) -> tuple[Any, dict[tuple[str, str], str]]:
    """The first memory from the middle of the store that a question made of its title's words
    recalls through the hook in every shape and size and under both agents (real titles hold
    everyday words, so not every one is a topic), with the event files of that question; every
    output is checked once here, before anything is timed."""
    out_file = str(scratch / "out.json")
    for memory in memories[500:560]:
        words = [w for w in (w.strip(".,:;()'\"").lower() for w in memory.title.split()) if w.isalpha() and len(w) > 3]
        if len(words) < 3:
            continue
        question = f"what did we decide about {' '.join(words[:4])}?"
        cases = {**events(root, question, random.Random(3)), **agent_events(scratch, root, question)}
        files = {}
        for key, text in cases.items():
            path = scratch / f"event-{key[0].replace(' ', '-')}-{key[1].replace(' ', '')}.json"
            path.write_text(text)
            files[key] = str(path)
        for key, path in files.items():
            _wall, _rss, code = C.spawn_timed([C.REAL_PYTHON, "-I", "-S", str(HOOK)], stdin=path, stdout=out_file, env=env)
            text = Path(out_file).read_text()
            if code != 0 or (key[0] != "no topic" and memory.id not in text) or (key[0] == "no topic" and text):
                break
        else:
            return memory, files
    raise SystemExit("bench: no memory of the store is recalled in every shape by a question made of its title")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=15, help="timed rounds (default 15)")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds first (default 2)")
    p.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder, removed)")
    p.add_argument("--write-results", action="store_true", help="update the bench_hook_input section of bench/RESULTS.md")
    args = p.parse_args(argv)
    machine_line = C.machine()
    scratch = C.scratch_dir(args.keep, "hook-input")
    env = C.isolate(scratch)
    try:
        memories = realtext.memories(R.data_dir(), 1000, 11)
        root = scratch / "store"
        C.bulk_store(root, memories, checkout=False)
        index.ensure_fresh(Store(root))
        env = {**env, "QUIPU_STORE": str(root)}
        _target, files = _cases(scratch, root, env, memories)
        commands = {key: [C.REAL_PYTHON, "-I", "-S", str(HOOK)] for key in files}
        baseline = ("python -I -S -c pass", "")
        times: dict[tuple[str, str], list[float]] = {key: [] for key in [*files, baseline]}
        order = [*files, baseline]
        for n in range(args.warmup + args.rounds):
            rotated = order[n % len(order):] + order[: n % len(order)]
            for key in rotated:
                if key == baseline:
                    wall, _rss, _code = C.spawn_timed([C.REAL_PYTHON, "-I", "-S", "-c", "pass"], env=env)
                else:
                    wall, _rss, _code = C.spawn_timed(commands[key], stdin=files[key], env=env)
                if n >= args.warmup:
                    times[key].append(wall)
        bare = C.median(times[baseline])
        rows = []
        verdicts = []
        for shape in ("plain", "escaped", "no topic"):
            small = C.median(times[(shape, "1 KB")])
            for name in SIZES:
                p50 = C.median(times[(shape, name)])
                rows.append([shape, name, f"{p50 * 1000:.1f}", f"{p50 / bare:.2f}x", f"{p50 / small:.2f}x"])
            ratio = C.median(times[(shape, "1 MB")]) / small
            verdicts.append(f"- {shape}: 1 MB costs {ratio:.2f}x a 1 KB prompt (goal <= {GOAL_RATIO:g}x): "
                            + ("met" if ratio <= GOAL_RATIO else "NOT met"))
        claude_p50, codex_p50 = (C.median(times[(agent, "1 KB + transcript")]) for agent in ("claude", "codex"))
        agent_rows = [[agent, f"{p50 * 1000:.1f}", f"{p50 / bare:.2f}x"]
                      for agent, p50 in (("Claude Code", claude_p50), ("Codex CLI", codex_p50))]
        verdicts.append(f"- agents: Codex's event and rollout cost {codex_p50 / claude_p50:.2f}x Claude Code's "
                        f"(goal <= {AGENT_GOAL:.2f}x): " + ("met" if codex_p50 / claude_p50 <= AGENT_GOAL else "NOT met"))
        body = (
            f"Store of 1,000 memories; {args.rounds} rounds; bare `python -I -S -c pass` p50 {bare * 1000:.1f} ms.\n\n"
            + C.table(["prompt", "size", "p50 ms", "vs bare -I -S", "vs 1 KB"], rows)
            + f"\n\nThe same 1 KB question with each agent's session file ({TURNS} turns with tool output):\n\n"
            + C.table(["agent", "p50 ms", "vs bare -I -S"], agent_rows)
            + "\n\n" + "\n".join(verdicts) + "\n"
        )
        print(body)
        if args.write_results:
            C.update_results("bench_hook_input", "Prompt hook: cost against the size of the prompt (issue 12)", body,
                             command=C.command_line(), machine_line=machine_line)
    finally:
        C.cleanup(scratch, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
