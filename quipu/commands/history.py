"""`quipu history`: past conversations, archived, searched, shown, forgotten and promoted.

Sub-commands: ``index`` (backfill every transcript), ``import`` (a ChatGPT or Claude.ai data
export, ``quipu.history.exports``), ``search``, ``show``, ``forget``,
``promote`` and ``append`` (one session; what the SessionEnd and PreCompact hooks start,
detached). The archive lives under ``$QUIPU_HOME/history``, never in a memory store.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
from pathlib import Path

from quipu.commands._common import add_json, count
from quipu.output import Progress, print_json, progress
from quipu.prompt import locate


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "history", help="past conversations: search every archived turn of every session",
        description="Every human prompt and assistant reply of every Claude Code and Codex CLI session, "
        "and of each imported ChatGPT or Claude.ai data export, labelled with its agent, redacted, kept "
        "under $QUIPU_HOME/history (never in a memory store) and searchable by words and by meaning. The "
        "SessionEnd and PreCompact hooks append each session; `quipu history index` backfills the rest. "
        "The prompt hook never reads it.",
        epilog="One process at a time writes the archive: a command that finds it busy says which process holds "
        "it, waits, and gives up after 60 s with exit 1 ($QUIPU_HISTORY_LOCK_WAIT sets the seconds).")
    hsub = p.add_subparsers(dest="history_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])

    ix = hsub.add_parser("index", help="archive every Claude Code and Codex CLI session on this machine",
                         description="Archive and index every transcript under Claude Code's projects folder "
                         "($CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects) and every Codex CLI session file "
                         "($CODEX_HOME/sessions, else ~/.codex/sessions), each turn labelled with its agent, "
                         "with a progress bar and a summary: "
                         "sessions, turns, redactions and skipped files with why. Running it again adds only "
                         "what is new. --rebuild recreates the search index from the archive alone.")
    ix.add_argument("--projects", metavar="DIR", help="the transcripts folder to read instead")
    ix.add_argument("--rebuild", action="store_true", help="rebuild the search index from the archive (no transcripts read)")
    add_json(ix)
    ix.set_defaults(func=run_index)

    im = hsub.add_parser("import", help="archive the conversations of a ChatGPT or Claude.ai data export",
                         description="Archive and index every conversation of a data export: KIND chatgpt for "
                         "ChatGPT's (Settings > Data controls > Export), claude for Claude.ai's (Settings > Privacy > "
                         "Export data). EXPORT is the .zip as downloaded (read in memory, never extracted) or the "
                         "conversations.json inside it. Each turn is redacted like any other and labelled with its "
                         "agent (chatgpt, claude.ai); a malformed conversation or message is skipped and counted. "
                         "Importing the same export again adds only what is new.",
                         epilog="Exit codes: 0 everything was read; 4 the rest was archived, but malformed entries "
                         "were skipped (counted); 1 nothing was read (the message says why).")
    im.add_argument("kind", choices=("chatgpt", "claude"), help="the service the export came from")
    im.add_argument("export", metavar="EXPORT", help="the export's .zip (or its conversations.json)")
    im.add_argument("--dry-run", action="store_true", help="count what would be archived; write nothing")
    add_json(im)
    im.set_defaults(func=run_import)

    s = hsub.add_parser("search", help="search past turns by words and by meaning",
                        description="Search archived turns: every content word of the query through the full-text "
                        "index and the query's meaning through a static embedding, fused by rank. Each hit says "
                        "when, in which project and where (SESSION:TURN, for `quipu history show`).")
    s.add_argument("query", help="what to look for")
    s.add_argument("--project", metavar="P", help="only turns of this project folder (and folders under it)")
    s.add_argument("--since", metavar="DATE", help="only turns since DATE (2026-05-01, an ISO time, or 7d, 2w, 3m, 1y)")
    s.add_argument("--role", choices=("user", "assistant"), help="only the person's prompts, or only the replies")
    s.add_argument("--limit", type=count(), default=10, help="at most this many hits (default 10)")
    add_json(s)
    s.set_defaults(func=run_search)

    sh = hsub.add_parser("show", help="print a session's turns, or the turns around one",
                         description="Print archived turns: SESSION (an id or a unique prefix) for the whole "
                         "session, SESSION:TURN for that turn with --context turns either side.")
    sh.add_argument("ref", metavar="SESSION[:TURN]")
    sh.add_argument("--context", type=count(0, 100_000), default=2, metavar="N", help="turns either side of TURN (default 2)")
    add_json(sh)
    sh.set_defaults(func=run_show)

    f = hsub.add_parser("forget", help="delete turns from the archive and the index, for good",
                        description="Remove turns from the archive and the search index for good (a leaked "
                        "secret, a private conversation) and never archive them again. This is the one "
                        "place quipu deletes: the archive is your own data. Selectors combine (all must hold). "
                        "It prints what it removed; --dry-run only shows it.")
    f.add_argument("session", nargs="?", metavar="SESSION", help="a session id (or a unique prefix)")
    f.add_argument("--project", metavar="P", help="turns of this project folder (and folders under it)")
    f.add_argument("--before", metavar="DATE", help="turns older than DATE (2026-05-01, an ISO time, or 30d...)")
    f.add_argument("--matching", metavar="TEXT", help="turns whose text contains TEXT (case-insensitive)")
    f.add_argument("--dry-run", action="store_true", help="show what would be removed; remove nothing")
    add_json(f)
    f.set_defaults(func=run_forget)

    pr = hsub.add_parser("promote", help="turn a past turn into a memory, through capture's gates",
                         description="Make a memory of turn SESSION:TURN in the current store, through the same "
                         "gates as capture (no secret, a claim rather than a command, nothing transient): one "
                         "commit, origin `session`, the session id in its trailer; `quipu retract ID` takes it out of recall "
                         "(nothing is deleted).")
    pr.add_argument("ref", metavar="SESSION:TURN")
    pr.add_argument("--title", help="the memory's title (default: the turn's first sentence)")
    pr.add_argument("--class", dest="cls", default="project-note",
                    choices=("rule", "preference", "fact", "reference", "project-note"),
                    help="the memory's class (default project-note)")
    pr.add_argument("--text", help="promote this excerpt of the turn instead of all of it")
    add_json(pr)
    pr.set_defaults(func=run_promote)

    a = hsub.add_parser("append", help="archive one session's new turns (what the session hooks run)",
                        description="Archive and index the new turns of one transcript. The SessionEnd and "
                        "PreCompact hooks start this detached (`--worker`); it is idempotent and locked. "
                        f"Set {locate.HISTORY_SWITCH}=0 to keep the hooks from archiving anything.")
    a.add_argument("--transcript", metavar="PATH", required=True, help="the session's transcript (JSONL)")
    a.add_argument("--session", metavar="ID", help="the session id (default: the one in the transcript)")
    a.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    add_json(a)
    a.set_defaults(func=run_append)


def is_enabled() -> bool:
    return locate.switched_on(os.environ, locate.HISTORY_SWITCH)


def _when(ts: str) -> str:
    from quipu.history.archive import parse_ts

    value = parse_ts(ts)
    return value.strftime("%Y-%m-%d %H:%M") if value else "(no time)"


def _one_line(text: str, limit: int = 160) -> str:
    from quipu.history import one_line

    flat = one_line(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def run_index(args: argparse.Namespace) -> int:
    from quipu.errors import FatalError
    from quipu.history import feed, index, one_line
    from quipu.history.archive import Layout

    layout = Layout.default()
    if args.rebuild:
        with layout.lock():
            count = index.rebuild(layout, progress=Progress(0, "sessions", after=2.0).update)
        if args.json:
            print_json({"rebuilt": True, "turns": count})
        else:
            print(f"Rebuilt the history index: {count} turns.")
        return 0
    roots = [Path(args.projects).expanduser()] if args.projects else feed.default_roots()
    if not any(r.is_dir() for r in roots):
        where = " or ".join(one_line(str(r)) for r in roots)
        if args.projects:
            raise FatalError(f"no transcripts folder at {where}\n- give a folder that exists")
        if args.json:  # no session has run yet on this machine: nothing to read is not a failure
            print_json({"projects": [str(r) for r in roots], "files": 0, "sessions": 0, "added": 0})
        else:
            print(f"No transcripts yet at {where}: nothing to archive.\n- Claude Code and Codex CLI write them "
                  "as sessions run; elsewhere, point to them with --projects DIR, or set CLAUDE_CONFIG_DIR or "
                  "CODEX_HOME")
        return 0
    summary = feed.backfill(roots, layout=layout, progress=Progress(0, "transcripts", after=2.0).update)
    if args.json:
        print_json({"projects": [str(r) for r in roots], **summary.to_json()})
        return 0
    where = " and ".join(one_line(str(r)) for r in roots if r.is_dir())
    print(f"{summary.files} files read under {where}: {summary.sessions} sessions, {summary.added} turns added, "
          f"{summary.updated} updated, {summary.redactions} secrets redacted"
          + (f", {summary.bad_lines} unreadable lines skipped" if summary.bad_lines else "")
          + (f", {summary.forgotten} forgotten turns left out" if summary.forgotten else "") + ".")
    if summary.skipped:
        print(f"Skipped {len(summary.skipped)} files:")
        for path, why in summary.skipped:
            print(f"  {one_line(path)}: {one_line(why)}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from quipu.errors import EXIT_SOME_SKIPPED
    from quipu.history import one_line
    from quipu.history.exports import import_export

    path = Path(args.export).expanduser().absolute()
    summary = import_export(args.kind, path, dry_run=args.dry_run,
                            progress=None if args.json else (lambda d, t: progress(d, t, "conversations")))
    code = EXIT_SOME_SKIPPED if summary.bad_lines else 0
    data = summary.to_json()
    data.pop("files")
    data["malformed_skipped"] = data.pop("bad_lines")
    if args.json:
        print_json({"export": str(path), "kind": args.kind, "dry_run": args.dry_run, **data})
        return code
    verb = "Would archive" if args.dry_run else "Archived"
    print(f"{verb} {summary.added} turns from {summary.sessions} conversations in {one_line(str(path))}"
          + ("" if args.dry_run else f" ({summary.updated} updated)")
          + f", {summary.redactions} secrets redacted"
          + (f", {summary.bad_lines} malformed entries skipped" if summary.bad_lines else "")
          + (f", {summary.forgotten} forgotten turns left out" if summary.forgotten else "") + ".")
    for where, why in summary.skipped:
        print(f"  skipped {one_line(where)}: {one_line(why)}")
    return code


def run_search(args: argparse.Namespace) -> int:
    from quipu.history import one_line
    from quipu.history.search import search

    result = search(args.query, project=args.project, since=args.since, role=args.role, limit=args.limit)
    if args.json:
        print_json(result.to_json())
        return 0
    if not result.hits:
        print("No past turns match." if result.turns else
              "No past turns are archived yet.\n- run `quipu history index` to archive every transcript")
        return 0
    for h in result.hits:
        print(one_line(f"{h.session}:{h.turn}  {_when(h.ts)}  {h.project or '(no project)'}  {h.role} ({h.agent})"))
        print(f"    {_one_line(h.text)}")
    if not result.meaning:
        print("(words only: meaning search needs the wordllama package and `quipu history index --rebuild`)",
              file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    from quipu.history import one_line
    from quipu.history.archive import Layout
    from quipu.history.forget import turns_around
    from quipu.history.promote import Ref

    ref = Ref.create(args.ref)
    sid, turns = turns_around(Layout.default(), ref.session, ref.turn, args.context)
    if args.json:
        print_json({"session": sid, "turns": [t.to_json() for t in turns]})
        return 0
    if turns:
        print(one_line(f"session {sid}  {turns[0].project or '(no project)'}"))
    for t in turns:
        mark = ">" if t.turn == ref.turn else " "
        print(one_line(f"{mark} [{t.turn}] {_when(t.ts)}  {t.role}" + (f"  ({t.branch})" if t.branch else "")))
        for line in t.text.splitlines() or [""]:
            print(f"      {line}")
    return 0


def run_forget(args: argparse.Namespace) -> int:
    from quipu.history import one_line
    from quipu.history.forget import forget
    from quipu.history.search import parse_since

    before = parse_since(args.before) if args.before else None
    report = forget(session=args.session, project=args.project, before=before, matching=args.matching,
                    dry_run=args.dry_run)
    if args.json:
        print_json(report.to_json())
        return 0
    verb = "Would remove" if args.dry_run else "Removed"
    data = report.to_json()
    print(f"{verb} {data['removed_turns']} turns from {len(data['sessions'])} sessions" + (":" if data["sessions"] else "."))
    for s in data["sessions"]:
        numbers = ", ".join(str(n) for n in s["turns"][:20]) + (" ..." if len(s["turns"]) > 20 else "")
        print(f"  {one_line(s['session'])}: " + ("the whole session" if s["whole"] else f"turns {numbers}"))
    return 0


def run_promote(args: argparse.Namespace) -> int:
    from quipu.commands._common import open_store
    from quipu.history.promote import promote

    store = open_store(args)
    memory = promote(store, args.ref, title=args.title, cls=args.cls, text=args.text)
    if args.json:
        print_json({"id": memory.id, "title": memory.title, "session": memory.session})
    else:
        print(f"Promoted {args.ref} to memory {memory.id}: {memory.title}  "
              f"(`quipu retract {memory.id}` takes it out of recall)")
    return 0


def run_append(args: argparse.Namespace) -> int:
    from quipu.history import locking, one_line
    from quipu.history.feed import append_transcript

    if not args.worker:
        summary = append_transcript(args.transcript, session_id=args.session)
        if args.json:
            print_json(summary.to_json())
        else:
            print(f"{summary.added} turns added, {summary.updated} updated, {summary.redactions} secrets redacted"
                  + "".join(f"; skipped {one_line(p)}: {one_line(why)}" for p, why in summary.skipped))
        return 0
    from quipu.commands.session_end import log

    try:
        # Started by a hook: nobody reads its stderr, and it waits behind a backfill longer than a command would.
        summary = append_transcript(args.transcript, session_id=args.session, wait=locking.WORKER_WAIT, quiet=True)
        log("history", f"session {args.session or '-'}: {summary.added} turns added, {summary.updated} updated, "
                       f"{summary.redactions} redacted at {_dt.datetime.now(_dt.timezone.utc):%H:%M:%S}"
                       + "".join(f"; skipped {p}: {why}" for p, why in summary.skipped))
    except locking.ArchiveBusy as exc:
        log("history", f"gave up on session {args.session or '-'}: {exc}")
    except BaseException as exc:  # noqa: BLE001 - nobody reads a detached child's exit code
        log("history", f"worker failed: {type(exc).__name__}: {exc}")
    return 0
