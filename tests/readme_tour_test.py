"""The README's tour, run verbatim: each `$ command` in a new home folder, its output compared with
the lines the README shows under it.

Comparison: the home folder reads as `~`, commit ids and times are compared as placeholders (they
differ on every run), a `…` in a line stands for any text, and a line of `…` alone for any number of
lines. `python tests/readme_tour_test.py` prints the tour as it runs now, to paste into the README.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
_SHA = re.compile(r"\b[0-9a-f]{12}\b")
_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")


def tour() -> list[tuple[str, list[str]]]:
    """(command, the output lines the README shows) for each `$` line of the tour's first block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## A short tour\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    continued = False
    for line in block.splitlines():
        if continued:
            steps[-1] = (steps[-1][0] + "\n" + line, steps[-1][1])
        elif line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
        continued = line.startswith("$ ") or continued
        continued = continued and line.endswith("\\")
    return steps


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("QUIPU_", "GIT_", "CLAUDE", "ANTHROPIC_", "XDG_")) and k not in ("VIRTUAL_ENV",)}
    env.update(HOME=str(home), PATH=os.pathsep.join([str(BIN), "/usr/bin", "/bin"]))
    return env


def run_tour(home: Path) -> list[tuple[str, int, list[str]]]:
    """Run each command as a person would type it (sh), in ``home``; (command, exit code, output lines)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    out = []
    for command, _shown in tour():
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, cwd=home, env=environment(home),
                              timeout=300)
        lines = (done.stdout + done.stderr).replace(str(home), "~").rstrip("\n").splitlines()
        out.append((command, done.returncode, lines))
    return out


def _norm(line: str) -> str:
    return _TIME.sub("<time>", _SHA.sub("<sha>", line.rstrip()))


def matches(shown: list[str], printed: list[str]) -> bool:
    if not shown:
        return not printed
    head = _norm(shown[0])
    if head == "…":
        return any(matches(shown[1:], printed[n:]) for n in range(len(printed) + 1))
    if not printed:
        return False
    pattern = "".join(".*" if part == "…" else re.escape(part) for part in re.split("(…)", head))
    return re.fullmatch(pattern, _norm(printed[0])) is not None and matches(shown[1:], printed[1:])


def test_the_readme_tour_prints_what_the_readme_shows(tmp_path: Path) -> None:
    assert not matches(["Added deploy-ci (rule): How we deploy"], ["Added deploy-ci (rule): How we ship"])
    assert matches(["Store: …", "…", "[ok] size: 2 memories"], ["Store: ~/s", "[ok] a", "[ok] b", "[ok] size: 2 memories"])
    steps = tour()
    assert len(steps) >= 6 and steps[0][0].startswith("quipu init")
    for (command, shown), (_same, code, printed) in zip(steps, run_tour(tmp_path / "home"), strict=True):
        assert code == 0, (command, printed)
        assert matches(shown, printed), f"$ {command}\nREADME shows:\n" + "\n".join(shown) + \
            "\nprinted:\n" + "\n".join(printed)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        for command, code, printed in run_tour(Path(scratch) / "home"):
            print(f"$ {command}" + (f"   [exit {code}]" if code else ""))
            print("\n".join(printed))
