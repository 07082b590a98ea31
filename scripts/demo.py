"""Walk through quipu on the example store (testing/example_memories.json) in a temporary folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testing.fixtures import PROMPT_HOOK, example_store  # noqa: E402

PROMPTS = [
    "am I about to nuke production with this deploy?",
    "I get `TypeError: Object of type datetime is not JSON serializable` in src/api/views.py",
    "which database host do we use now?",
    "ok go ahead",
    "thanks, continue",
]


def quipu(store: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "quipu", "--store", str(store), *args], capture_output=True, text=True)
    return (out.stdout + out.stderr).rstrip()


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="quipu-demo-"))
    os.environ["QUIPU_HOME"] = str(work / "home")
    store = example_store(work / "store").root
    print(f"Example store: {store}\n")
    print(quipu(store, "list"), "\n")
    print("The UserPromptSubmit hook, run as Claude Code runs it (python -I -S, event JSON on stdin):\n")
    for prompt in PROMPTS:
        event = {"session_id": "demo", "transcript_path": "", "cwd": str(store), "prompt": prompt,
                 "hook_event_name": "UserPromptSubmit"}
        proc = subprocess.run([sys.executable, "-I", "-S", str(PROMPT_HOOK)], input=json.dumps(event),
                              capture_output=True, text=True, env={**os.environ, "QUIPU_STORE": str(store)})
        print(f"> {prompt}")
        if proc.stdout:
            print(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])
        else:
            print("(silent)")
        print()
    print("(The first prompt was recalled in the hook's own process, which then started the prompt server: "
          "as soon as it listens, prompts are answered by it, with the hook's modules already loaded. It stops "
          "after 15 idle minutes; `quipu doctor` shows it.)\n")
    print("Why the first prompt matched:\n")
    print(quipu(store, "recall", PROMPTS[0], "--explain"), "\n")
    print("A supersession is a commit; undo is a revert:\n")
    print(quipu(store, "supersede", "deploy-accident", "deploy-procedure", "--reason", "demo"))
    print(quipu(store, "log", "--limit", "3"))
    print(quipu(store, "undo", "--memory", "deploy-accident"))
    print(quipu(store, "show", "deploy-accident").split("\n\n")[0])
    print("\n(The supersession ran in its own process, which then started the command server: `quipu add`, `show`, "
          "`label`, `retract` and `supersede` are run by a child it forks, with their modules already loaded, "
          "in your folder, environment and terminal. It stops after 15 idle minutes; `quipu doctor` shows it.)")
    print(f"\nThe store is an ordinary git repository: git -C {store} log --stat")
    bin_dir = Path(sys.executable).parent
    print(f"\nquipu is installed in {bin_dir.parent}. Run it as {bin_dir / 'quipu'}, or put it on your PATH:\n"
          f"    export PATH=\"{bin_dir}:$PATH\"\n"
          "then start with `quipu init` (the README's tour). To install it for good, as a tool of its own: "
          "`pipx install .` or `uv tool install .` in this folder.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
