"""Health checks behind `quipu doctor`. Each check returns a ``Check``; none raises for a finding.

Checks: what a shared store may not do (settings only the user may choose, committed symlinks,
submodules, cache files and any file outside the store's schema, ``quipu.store.schema``), a stale
git lock (``quipu.store.repair``), the index (fresh or not, rebuilt if needed, and why: behind HEAD,
missing, or damaged; a journal a killed index write left beside it is named, with the command that
heals it), files skipped for bad frontmatter, supersessions a memory's own ``supersedes`` field
claims with no decision behind them (``quipu.index.derive.unrecorded_claims``), the git hooks, the
store's size, git's garbage-collection state, Claude Code's MEMORY.md load limit, quipu's hooks and
MCP server in Claude Code (each started, and each settings file read as Claude Code reads it;
``quipu.claude.wiring``), quipu's wiring in Codex CLI's hooks.json and config.toml, whether the
offline model can run (``quipu.model.offline_status``), and whether the prompt server answers
(``quipu.prompt.server.status``), and which of the environment's switches turn memory off for the
sessions started from it (``locate.switched_on``). A check that meets something quipu refuses
(``UnsafeStore``) reports it.
"""
from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quipu.store import githooks
from quipu.index import index
from quipu.claude import memorymd
from quipu.store import safepath
from quipu.store import locks
from quipu.store import schema
from quipu.store import settings
from quipu.index.schema import leftovers
from quipu.errors import UnsafeStore
from quipu.store.store import Store


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "summary": self.summary, "details": self.details}


def check_settings(store: Store) -> Check:
    found = settings.problems(store)
    if not found:
        return Check("settings", True, "the store's quipu.toml sets nothing only you may choose")
    return Check("settings", False, f"{len(found)} store setting(s) refused or clamped (see docs/security.md)", found)


def check_tree(store: Store) -> Check:
    """HEAD's tree against the store's schema (``quipu.store.schema``): what a clone or a sync of
    this store would refuse, and what quipu never follows."""
    found = safepath.special_entries(store.repo)
    named = {f.rsplit(" (", 1)[0] for f in found}
    found += [p for p in schema.tree_problems(store.repo)
              if p.split(": ", 1)[0] not in named and not p.startswith(safepath.CACHE + "/")]
    try:
        _ = store.cache_dir  # raises UnsafeStore when the cache leaves the store
    except UnsafeStore as exc:
        found.append(str(exc).replace("\n", " "))
    if not found:
        return Check("store tree", True, "every file fits the store's schema; no symlinks, submodules or cache files")
    return Check("store tree", False,
                 f"{len(found)} path(s) outside the store's schema: quipu does not follow them and a clone or sync "
                 "refuses them; move them out (`git rm --cached PATH`) or fix them, and commit", found)


def check_index(store: Store) -> Check:
    left = stale_index_files(store)
    if left:
        return Check("index", False, f"a killed index write left {', '.join(p.name for p in left)} beside the index "
                     "(recall stays off while it is there); run `quipu index --rebuild`")
    before = _index_before(store)
    was = index.ensure_fresh(store)
    if was.action == "fresh":
        return Check("index", True, f"fresh at {(was.head or '')[:12]}")
    took = f"{was.seconds * 1000:.0f} ms"
    if was.action != "rebuilt":
        return Check("index", True, f"was behind HEAD; {was.action} ({was.changed} change(s), {took})")
    rebuilt = f"rebuilt from git ({was.changed} memories, {took})"
    if before.startswith("unreadable"):
        return Check("index", True, f"was damaged ({before}); {rebuilt}")
    if before in ("missing", "built for another store or by another quipu version"):
        return Check("index", True, f"was {before}; {rebuilt}")
    return Check("index", True, f"was {'at HEAD but could not be trusted' if before == was.head else 'behind HEAD'}; "
                 f"{rebuilt}")


def _index_before(store: Store) -> str:
    """The index file as the refresh will find it: "missing", "unreadable: why", "built for another
    store or by another quipu version", or the commit it was built at. Read only, on its own connection."""
    import sqlite3

    from quipu.index.schema import SCHEMA_VERSION, read_meta

    path = index.index_file(store)
    if not path.is_file():
        return "missing"
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            meta = read_meta(db)
            found = [str(row[0]) for row in db.execute("PRAGMA quick_check(5)")]
            check = next((line for text in found for line in text.splitlines() if not line.startswith("***")), "ok")
            if check == "ok":
                db.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'quipu'").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        return f"unreadable: {exc}"
    if check != "ok":
        return f"unreadable: {check[:120]}"
    if meta.get("schema") != SCHEMA_VERSION or meta.get("store") != str(store.root.resolve()):
        return "built for another store or by another quipu version"
    return meta.get("head") or ""


def stale_index_files(store: Store) -> list[Path]:
    """The journal, WAL and shared-memory files beside the index while no index writer runs."""
    path = store.index_path
    if locks.is_held(path.with_name("index.lock")):
        return []
    return leftovers(path)


def check_problems(store: Store) -> Check:
    rows = index.rows(store, "SELECT path, problem FROM problems ORDER BY path")
    if not rows:
        return Check("schema", True, "every memory file parses and validates")
    return Check(
        "schema",
        False,
        f"{len(rows)} file(s) skipped for bad frontmatter (fix them and commit)",
        [r["problem"] for r in rows],
    )


def check_claims(store: Store) -> Check:
    """Supersessions a memory's own ``supersedes`` field claims and no decision records."""
    from quipu.index.derive import unrecorded_claims

    found = index.query(store, unrecorded_claims)
    if not found:
        return Check("supersessions", True, "every supersession in force is a decision one undo reverts")
    return Check("supersessions", False, f"{len(found)} supersession(s) only a memory's own `supersedes` field "
                 "claims (a teammate's file or an older quipu's add): they decide nothing; to record one, run "
                 "`quipu supersede OLD NEW`", [f"{new} says it replaces {old}: `quipu supersede {old} {new}`"
                                               for old, new in found[:20]])


def check_hooks(store: Store) -> Check:
    states = githooks.status(store.root)
    notes = githooks.notes(store.root)
    outside = [hook for hook, state in states.items() if state == "outside"]
    if outside:
        return Check("git hooks", False, f"quipu's {', '.join(outside)} hook(s) are in a folder outside the store, which "
                     "git runs for other repositories (run `quipu hooks uninstall`, then `quipu hooks install`)", notes)
    missing = [hook for hook, state in states.items() if state != "installed"]
    if not missing:
        return Check("git hooks", True, f"installed: {', '.join(states)}", notes)
    return Check("git hooks", False, f"not installed: {', '.join(missing)} (run `quipu hooks install`)", notes)


def check_size(store: Store) -> Check:
    rows = index.rows(store, "SELECT count(*) AS n, sum(length(body)) AS chars FROM memories")
    n, chars = rows[0]["n"], rows[0]["chars"] or 0
    return Check("size", True, f"{n} memories, {chars:,} characters of body text")


def check_gc(store: Store) -> Check:
    try:
        out = subprocess.run(
            ["git", "-C", str(store.root), "count-objects", "-v"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        return Check("git objects", False, f"cannot run `git count-objects`: {exc}")
    values = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    loose = int(values.get("count", "0"))
    ok = loose < 6700
    summary = f"{loose} loose objects ({values.get('size', '0')} KiB), {values.get('packs', '0')} pack(s)"
    if not ok:
        summary += f"; run `git -C {store.root} gc`"
    return Check("git objects", ok, summary)


def check_memory_md(store: Store, path: str | None = None) -> Check:
    """Claude Code's auto-memory index (this project's, or ``path``) against its 200-line / 25,000-byte load limit."""
    ok, summary, details = memorymd.finding(path)
    return Check("MEMORY.md", ok, summary, details)


def check_always_on(store: Store) -> Check:
    """The always-on layer (profile + always-on rules): its size, and what did not fit."""
    from quipu.claude import always_on
    from quipu.capture import profile

    layer = always_on.build(store)
    card = profile.read_card(store)
    summary = (f"{layer.tokens}/{layer.budget_tokens} tokens; profile {card.header()}; "
               f"{len(layer.rules)} always-on rule(s)")
    details = [
        (f"left out: rule {item.ref} {item.title!r}" if item.kind == "rule" else f"left out: profile line {item.ref!r}")
        + f" ({item.reason}; {'searchable' if item.searchable else 'not searchable yet'})"
        for item in layer.left_out
    ]
    details += [f"profile.md line that is not a card line (write it as '- <Prefix>: <text>'): {line}"
                for line in card.unparsed]
    if not layer.left_out and not card.unparsed:
        return Check("always-on layer", True, summary)
    summary += f"; {len(layer.left_out)} item(s) left out"
    refused = sum(item.refused for item in layer.left_out)
    if refused:
        summary += (f"; {refused} refused by the card's safety gates (a hand edit or a teammate's push put them "
                    "there: `quipu profile show` and `quipu log` say which)")
    unsearchable = any(not item.searchable for item in layer.left_out)
    if unsearchable:
        summary += "; run `quipu profile fit` so the left-out profile lines become searchable"
    if card.unparsed:
        summary += f"; {len(card.unparsed)} line(s) of profile.md are not card lines"
    return Check("always-on layer", not (unsearchable or card.unparsed or refused), summary, details)


def check_codex(store: Store) -> Check:
    """Codex CLI's wiring (``quipu install codex``), in the user's and this project's configuration."""
    from quipu.codex import config as codex_config

    found = codex_config.wiring()
    if not found:
        return Check("codex", True, "quipu is not wired into Codex CLI here (`quipu install codex` does it)")
    bad = [f"{where}: {what}" for where, ok, what in found if not ok]
    if not bad:
        return Check("codex", True, "quipu's hooks and MCP server are in place for Codex CLI; Codex runs a new "
                     "hook only once you trust it in /hooks", [f"{where}: {what}" for where, _ok, what in found])
    return Check("codex", False, f"{len(bad)} Codex CLI file(s) hold stale or incomplete quipu wiring", bad)


def check_claude_code(store: Store) -> Check:
    """quipu's hooks and MCP server in Claude Code's settings: each one started, the server's switches,
    and each settings file Claude Code would ignore (not valid JSON: none of its hooks run)."""
    from quipu.claude import wiring

    found = wiring.hook_findings() + wiring.mcp_findings()
    if not found:
        return Check("Claude Code", True, "quipu is not wired into Claude Code's settings here "
                     "(`quipu install claude`, or the plugin)")
    bad = [line for ok, line in found if not ok]
    if not bad:
        return Check("Claude Code", True, f"{len(found)} hook(s), server(s) and switch(es) checked; each starts",
                     [line for _ok, line in found])
    return Check("Claude Code", False, f"{len(bad)} of quipu's hooks, MCP settings or Claude Code's settings files "
                 "do not work; the fix is under each", bad)


def check_capture(store: Store) -> Check:
    """Whether the offline model (capture at session end, the sweep) can run here; a failure only once
    quipu's session hooks are installed, since that is when capture is expected to run."""
    import os

    from quipu import model
    from quipu.claude import wiring

    spec = os.environ.get(settings.MODEL_ENV) or settings.user_setting("sweep", "model") or "claude"
    ok, why = model.offline_status(str(spec), use_api_key=settings.user_setting("sweep", "use_api_key") is True)
    summary, *fixes = why.split("\n")
    if ok:
        return Check("capture", True, f"the offline model can run: {summary}")
    hooked = any(ok_ and "SessionEnd hook" in line for ok_, line in wiring.hook_findings(quick=True))
    return Check("capture", not hooked, f"the offline model {summary}; sessions are not captured" if hooked else
                 f"the offline model {summary} (it matters once quipu's hooks are installed)", fixes)


def check_prompt_server(store: Store) -> Check:
    """The prompt server, which answers the prompt hook with its modules kept loaded (``quipu.prompt.server``)."""
    return _server_check("prompt")


def check_command_server(store: Store) -> Check:
    """The command server, which runs ``quipu add`` and the other one-memory commands with their
    modules kept loaded (``quipu.warm``)."""
    return _server_check("command")


def _server_check(kind: str) -> Check:
    import os

    from quipu.prompt import locate, server

    ok, summary, fixes = server.status(locate.quipu_home(), dict(os.environ), kind)
    return Check(f"{kind} server", ok, summary, fixes)


def check_switches(store: Store) -> Check:
    """The switches of this environment that turn memory off for the sessions started in it
    (``QUIPU_RECALL``, ``QUIPU_CAPTURE``, ``QUIPU_HISTORY``): set in a shell's startup file they
    would keep every session silent. A finding, never a failure: it may be meant."""
    import os

    from quipu.prompt import locate

    what = {locate.RECALL_SWITCH: "nothing of the store is injected (recall, profile, always-on rules)",
            locate.CAPTURE_SWITCH: "nothing of a session is captured",
            locate.HISTORY_SWITCH: "no session's turns are archived"}
    off = [name for name in what if not locate.switched_on(os.environ, name)]
    if not off:
        return Check("switches", True, "memory is on for sessions started here (no QUIPU_RECALL, QUIPU_CAPTURE "
                                       "or QUIPU_HISTORY set off)")
    return Check("switches", True, f"{', '.join(off)} off in this environment: sessions started from it opt out",
                 [f"{name}={os.environ.get(name, '').strip()}: {what[name]}; unset it to turn it back on" for name in off])


def check_project_folder(store: Store) -> Check:
    """A ``.quipu`` folder here or above that is not a store: passed over when quipu looks for the
    project's store, so this project's sessions read the per-user store (``locate.not_stores``)."""
    from quipu.prompt import locate

    passed = locate.not_stores()
    if not passed:
        return Check("project store", True, "no .quipu folder here is passed over")
    return Check("project store", False, f"{passed[0]} is not a quipu store, so it is passed over: "
                 f"this project reads {store.root}",
                 [f"{folder}: no git repository with a quipu.toml; to make this project's store, move its files "
                  f"aside and run `quipu init {folder}`, or rename the folder" for folder in passed])


CHECKS: list[Callable[[Store], Check]] = [
    check_settings, check_tree, check_index, check_problems, check_claims, check_hooks, check_size, check_gc, check_memory_md,
    check_always_on, check_claude_code, check_capture, check_codex, check_prompt_server,
    check_command_server, check_switches, check_project_folder,
]


def _run(check: Callable[[Store], Check], store: Store) -> Check:
    try:
        return check(store)
    except UnsafeStore as exc:
        return Check(check.__name__.removeprefix("check_").replace("_", " "), False, str(exc).splitlines()[0],
                     str(exc).splitlines()[1:])


def run_checks(store: Store) -> list[Check]:
    return [_run(check, store) for check in CHECKS]
