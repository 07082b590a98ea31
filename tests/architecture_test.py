"""The flow of docs/architecture.md, pinned by reading imports: each part imports only the parts below it,
and the prompt package imports nothing but the standard library and itself."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "quipu"

# Lowest first. A module may import its own part and the parts on lower rows, never a row above
# nor (outside its own part) a part on its own row.
LAYERS: list[set[str]] = [
    {"quipu", "quipu.errors", "quipu.lite"},
    {"quipu.prompt", "quipu.model", "quipu.probes"},
    {"quipu.store"},
    {"quipu.index"},
    {"quipu.capture", "quipu.verify", "quipu.sync"},
    {"quipu.claude"},
    {"quipu.codex"},
    {"quipu.curate", "quipu.history"},
    {"quipu.skills"},
    {"quipu.output", "quipu.doctor"},
    {"quipu.mcp", "quipu.serve"},
    {"quipu.commands"},
    {"quipu.cli"},
    {"quipu.warm"},
    {"quipu.__main__"},
]
RANK = {part: row for row, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def quipu_imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    """Every quipu module ``path`` imports (``from quipu.x import y`` counts x.y when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                is_module = (PACKAGE.parent / full.replace(".", "/")).with_suffix(".py").is_file() or \
                    (PACKAGE.parent / full.replace(".", "/") / "__init__.py").is_file()
                found.add(full if is_module else node.module)
    return {m for m in found if m == "quipu" or m.startswith("quipu.")}


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_assets" not in p.parts)


def test_every_module_belongs_to_a_part_of_the_flow() -> None:
    unknown = sorted({part_of(module_name(p)) for p in modules()} - set(RANK))
    assert unknown == [], f"add {unknown} to LAYERS (and to docs/architecture.md)"


def test_each_part_imports_only_the_parts_below_it() -> None:
    offenders = []
    for path in modules():
        here = part_of(module_name(path))
        for imported in quipu_imports(path):
            there = part_of(imported)
            if there == here or there == "quipu":
                continue
            if RANK[there] >= RANK[here]:
                offenders.append(f"{module_name(path)} imports {imported}")
    assert offenders == []


def test_nothing_but_the_entry_points_imports_the_cli() -> None:
    offenders = [module_name(p) for p in modules()
                 if "quipu.cli" in quipu_imports(p) and part_of(module_name(p)) not in ("quipu.__main__", "quipu.warm")]
    assert offenders == []


def test_the_prompt_package_imports_only_the_standard_library_and_itself() -> None:
    """At module level (``if TYPE_CHECKING:`` blocks never run): the stdlib-only rule is the rule of one folder."""
    stdlib = set(sys.stdlib_module_names)
    prompt = PACKAGE / "prompt"
    for path in sorted(prompt.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "quipu":
                    assert name == "quipu.prompt" or name.startswith("quipu.prompt."), \
                        f"{module_name(path)} imports {name}, which is outside the prompt package"
                else:
                    assert name.split(".")[0] in stdlib, f"{module_name(path)} imports {name}"


def test_the_hook_loads_every_module_of_the_prompt_package() -> None:
    """``load_prompt_path`` runs the package from bytecode in dependency order: it lists each module once,
    after the modules it imports. A module left out is one only ever imported inside a function (the
    launcher, for the rare index refresh), loaded the usual way when needed."""
    from quipu.prompt import PROMPT_PATH

    shorts = {p.stem for p in (PACKAGE / "prompt").glob("*.py")} - {"__init__"}
    assert len(set(PROMPT_PATH)) == len(PROMPT_PATH) and set(PROMPT_PATH) <= shorts
    at_top = {m.rsplit(".", 1)[1] for s in shorts
              for m in quipu_imports(PACKAGE / "prompt" / f"{s}.py", top_level_only=True) if m.startswith("quipu.prompt.")}
    assert at_top <= set(PROMPT_PATH)
    for i, short in enumerate(PROMPT_PATH):
        needed = {m.rsplit(".", 1)[1] for m in quipu_imports(PACKAGE / "prompt" / f"{short}.py", top_level_only=True)
                  if m.startswith("quipu.prompt.")}
        assert needed <= set(PROMPT_PATH[:i]), f"{short} imports {needed - set(PROMPT_PATH[:i])} before they load"


def test_no_module_is_over_450_lines() -> None:
    long = {module_name(p): n for p in modules() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450}
    assert long == {}
