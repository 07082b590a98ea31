"""`quipu skills`: procedures repeated in three or more past sessions, drafted as inert skills.

Sub-commands: ``candidates`` (counted in the history index, no model), ``draft`` (one model call
per candidate at most, through the gate, into the store's drafts folder, which Claude Code never
loads), ``list`` (the drafts and the refused ones with their reasons), ``promote`` and ``demote``
(a person, in their own terminal, copies a draft where Claude Code loads skills, or takes it out).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from quipu.commands._common import add_json, count, open_store
from quipu.errors import FatalError
from quipu.output import print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from quipu.skills.detect import Candidate

DEFAULT_MAX_CALLS = 10
DEFAULT_MAX_CHARS = 60_000


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from quipu.skills.detect import MIN_SESSIONS

    p = sub.add_parser(
        "skills", help="draft skills from procedures repeated in 3+ sessions; a person promotes them",
        description=f"Find procedures (tool calls and commands, with paths and values abstracted) repeated in "
        f"{MIN_SESSIONS} or more past sessions of the history index, draft each as a Claude Code skill kept inert "
        "in the store (skills/drafts, a folder Claude Code never loads), refuse drafts that fail the gate "
        "(no failure from those sessions named, a command or path that does not exist, a built-in or existing "
        "name shadowed, a body outside the compact-to-standard length, an unverifiable claim, a weakened "
        "safeguard, a shell command, file include or frontmatter field Claude Code would act on as the skill "
        "loads), and let only a person promote one. Every step is one commit `quipu undo` reverts.")
    ssub = p.add_subparsers(dest="skills_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])

    c = ssub.add_parser("candidates", help="procedures repeated in 3+ sessions, with the sessions (no model)",
                        description="List the procedures that recur in at least --min-sessions distinct sessions "
                        "of the history index, ranked by sessions, occurrences and the last time seen, with "
                        "the sessions (SESSION:TURN) and the error messages found around them. A turn a resumed "
                        "session repeats counts once. Asks no model.")
    c.add_argument("--min-sessions", type=count(1), default=MIN_SESSIONS, metavar="N",
                   help=f"at least N distinct sessions (default and minimum {MIN_SESSIONS})")
    add_json(c)
    c.set_defaults(func=run_candidates)

    d = ssub.add_parser("draft", help="draft the candidates as inert skills, through the gate",
                        description="Ask the model for one skill per candidate not drafted before (one call "
                        "each at most; none for a candidate seen in too few sessions or with no error to name, nor for "
                        "one whose draft or refusal was undone unless named by --again), "
                        "check each draft in code, and commit it to skills/drafts/ or, refused, to the review "
                        "queue with its reasons. Nothing reaches a folder Claude Code loads.")
    d.add_argument("--model", metavar="SPEC",
                   help="claude (default), claude:<model> or command:<command line> "
                        "(default: QUIPU_MODEL, then [sweep] model in $QUIPU_HOME/config.toml, else claude)")
    d.add_argument("--max-calls", type=count(), metavar="N",
                   help=f"at most N model calls in this run (default {DEFAULT_MAX_CALLS}; 0 for no limit)")
    d.add_argument("--max-chars", type=count(), metavar="N",
                   help=f"at most N characters sent to the model in this run (default {DEFAULT_MAX_CHARS:,}; "
                        "0 for no limit)")
    d.add_argument("--again", action="append", default=[], metavar="CANDIDATE",
                   help="draft this candidate anew though its draft or refusal was undone (a candidate a "
                        "person took back is otherwise never sent to the model again); repeatable")
    add_json(d)
    d.set_defaults(func=run_draft)

    ls = ssub.add_parser("list", help="the drafts, where each is promoted, and the refused ones with why",
                         description="List the skill drafts in the store (and where each is promoted) and the "
                         "review queue of refused drafts with every reason.")
    add_json(ls)
    ls.set_defaults(func=run_list)

    pr = ssub.add_parser("promote", help="copy a draft where Claude Code loads skills (a person only)",
                         description="Copy skills/drafts/NAME/SKILL.md to .claude/skills/NAME/ of the project "
                         "(--project, the default) or to ~/.claude/skills/NAME/ (--user), and commit who "
                         "promoted it. Refused inside Claude Code or a model child, when a skill of that "
                         "name exists, or when the draft, as the store holds it now, fails the gate's content "
                         "checks (among them a shell command, an @path include or a frontmatter field beyond a "
                         "name and a description). `quipu skills demote NAME` takes it back out.")
    pr.add_argument("name", metavar="NAME")
    where = pr.add_mutually_exclusive_group()
    where.add_argument("--project", action="store_true", help="the current project's .claude/skills (default)")
    where.add_argument("--user", action="store_true", help="your own skills folder, for every project")
    add_json(pr)
    pr.set_defaults(func=run_promote)

    de = ssub.add_parser("demote", help="remove a promoted skill again; the draft stays in the store",
                         description="Remove the SKILL.md that `quipu skills promote` copied (left alone if "
                         "you edited it since) and commit who demoted it. The draft stays in the store.")
    de.add_argument("name", metavar="NAME")
    add_json(de)
    de.set_defaults(func=run_demote)


def _index_path() -> Path:
    from quipu.history.archive import Layout

    return Layout.default().index


def _show_candidate(c: Candidate) -> None:
    print(f"{c.id}  {len(c.sessions)} sessions, {len(c.occurrences)} times, last {c.last_seen[:16] or '?'}")
    for i, step in enumerate(c.steps, 1):
        print(f"    {i}. {step}")
    print("    sessions: " + ", ".join(f"{o.session}:{o.turn}" for o in c.occurrences[:8])
          + (" ..." if len(c.occurrences) > 8 else ""))
    for f in c.failures[:3]:
        print(f"    error seen: {f}")


def run_candidates(args: argparse.Namespace) -> int:
    from quipu.skills.detect import find_candidates

    found = find_candidates(_index_path(), min_sessions=args.min_sessions)
    if args.json:
        print_json([c.to_json() for c in found])
        return 0
    if not found:
        print("No procedure recurs in enough sessions to draft a skill.")
    for c in found:
        _show_candidate(c)
    return 0


def run_draft(args: argparse.Namespace) -> int:
    from quipu.commands.sweep import make_budget, make_model
    from quipu.model import MeteredModel
    from quipu.skills import gate
    from quipu.skills.detect import find_candidates
    from quipu.skills.draft import as_text, draft_all

    store = open_store(args)
    if args.again:
        from quipu.skills import queue

        unknown = sorted(set(args.again) - queue.taken_back(store))
        if unknown:
            raise FatalError(f"--again {unknown[0]}: no draft or refusal of that candidate was undone, so it is not "
                             "held back; `quipu skills list` shows what was drafted or refused, "
                             "`quipu skills candidates` what can be")
    found = find_candidates(_index_path())
    roots = tuple(dict.fromkeys(Path(p) for c in found for p in c.projects))
    context = gate.Context(existing_skills=gate.existing_skill_names(roots))
    metered = None
    if found:  # no candidate, no model: nothing is started or asked
        budget = make_budget(args, store, DEFAULT_MAX_CALLS, DEFAULT_MAX_CHARS)
        metered = MeteredModel(make_model(args.model, store), budget, store.cache_dir / "model-calls.jsonl")
    report = draft_all(store, found, metered, context, again=args.again)
    usage = metered.summary()._asdict() if metered else {"calls": 0}
    if args.json:
        print_json({**report.to_json(), "candidates": len(found), "model": usage})
        return 0
    if not found:
        print("No procedure recurs in enough sessions to draft a skill; no model was asked.")
    for outcome in report.outcomes:
        print(as_text(outcome))
    print(f"{len(found)} candidates, {report.skipped} drafted, refused or taken back before "
          f"(`--again CANDIDATE` drafts one that was taken back anew), {usage['calls']} model calls.")
    if report.stopped:
        print(f"Stopped: {report.stopped}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from quipu.skills import queue

    items = queue.entries(open_store(args))
    if args.json:
        print_json([e.to_json() for e in items])
        return 0
    if not items:
        print("No skill drafts.")
    for e in items:
        if e.kind == "draft":
            where = e.data.get("promoted")
            print(f"draft    {e.name}  ({len(e.data.get('sessions', []))} sessions)"
                  + (f"  promoted to {where}" if where else "  inert"))
        else:
            print(f"refused  {e.name or e.data.get('candidate')}: " + "; ".join(e.data.get("reasons", [])))
    return 0


def run_promote(args: argparse.Namespace) -> int:
    from quipu.claude.settings import claude_dir, project_root
    from quipu.skills.promote import promote

    where = claude_dir() / "skills" if args.user else project_root() / ".claude" / "skills"
    done = promote(open_store(args), args.name, where)
    if args.json:
        print_json({"name": done.name, "path": str(done.path), "commit": done.commit})
    else:
        print(f"Promoted {done.name} to {done.path} (commit {done.commit[:12]}); "
              f"`quipu skills demote {done.name}` takes it back out.")
    return 0


def run_demote(args: argparse.Namespace) -> int:
    from quipu.skills.promote import demote

    done = demote(open_store(args), args.name)
    if args.json:
        print_json({"name": done.name, "path": str(done.path), "commit": done.commit})
    else:
        print(f"Demoted {done.name}: {done.path} removed (commit {done.commit[:12]}); the draft stays in the store.")
    return 0
