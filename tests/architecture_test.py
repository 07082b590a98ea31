"""The direction store -> index -> recall -> curate/verify/profile -> cli, pinned by reading imports."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "quipu"
PROMPT_PATH = {"quipu", "quipu.prompt.hook", "quipu.prompt.recall", "quipu.prompt.query", "quipu.prompt.transcript", "quipu.prompt.locate",
               "quipu.prompt._fastjson", "quipu.prompt._fs", "quipu.prompt.vocabulary", "quipu.prompt.fence", "quipu.prompt.launch"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def quipu_imports(path: Path) -> set[str]:
    return {name for name in imports_of(path) if name == "quipu" or name.startswith("quipu.")}


def test_the_store_knows_nothing_of_the_layers_above_it() -> None:
    for name in ("store", "gitstore", "memory", "errors", "locate"):
        upward = {m for m in quipu_imports(PACKAGE / f"{name}.py")
                  if m.split(".")[1:2] and m.split(".")[1] in ("index", "recall", "cli", "commands", "curate", "verify")}
        assert upward == set(), f"quipu.{name} imports {upward}"


def test_nothing_but_the_entry_points_imports_the_cli() -> None:
    offenders = [module_name(p) for p in PACKAGE.rglob("*.py")
                 if "quipu.cli" in imports_of(p) and p.name not in ("__main__.py",)]
    assert offenders == []


def test_the_prompt_path_imports_only_the_standard_library_and_itself() -> None:
    stdlib = set(sys.stdlib_module_names)
    for name in PROMPT_PATH:
        path = PACKAGE / "__init__.py" if name == "quipu" else PACKAGE / f"{name.split('.', 1)[1]}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only; `if TYPE_CHECKING:` blocks never run
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [f"quipu.{a.name}" for a in node.names] if node.module == "quipu" else [node.module]
            for module in modules:
                if module.split(".")[0] == "quipu":
                    assert module in PROMPT_PATH, f"{name} imports {module}, which is not on the prompt path"
                else:
                    assert module.split(".")[0] in stdlib, f"{name} imports {module}"
