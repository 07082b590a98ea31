"""`quipu profile show|add|remove|fit|rebuild|check`: the always-on card of durable facts about the user."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quipu.curate import consistency
from quipu.capture import profile
from quipu.capture import profile_rebuild
from quipu.capture import profile_remove
from quipu.commands._common import add_json, count, open_store
from quipu.commands.capture import add_model_options, model_and_budget
from quipu.errors import FatalError
from quipu.model import MeteredModel
from quipu.output import print_json

_PREFIX_NAMES = {p.lower().replace(" ", "-"): p for p in profile.PREFIXES}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "profile",
        help="show or change the always-on profile card",
        description="The profile is a small card of durable facts about the user, injected at every session "
        "start. Four prefixes: Identity, Preference, Environment, Working style. A full card never refuses a "
        "write: its weakest line moves to the searchable store. A line that came from a memory leaves the "
        "session's card when that memory is retracted or superseded.",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = verbs.add_parser("show", help="print the card with its capacity header",
                         description="Print the card, and each line a session does not see with why (the memory it "
                         "came from is retracted or superseded, or the card's gates refuse its text).")
    add_json(s)
    s.set_defaults(func=run_show)

    a = verbs.add_parser(
        "add", help="add a line to the card",
        description="Add a line. A value that could change within six months is kept in the store instead "
        "(the admission test); on a full card the weakest line moves to the store.")
    a.add_argument("prefix", choices=sorted(_PREFIX_NAMES), help="the line's prefix")
    a.add_argument("text", help='the claim, e.g. "The user prefers short answers with code first"')
    a.add_argument("--stable-months", type=count(1, 1200), default=profile.DEFAULT_STABLE_MONTHS, metavar="N",
                   help=f"how many months the value will plausibly stay true (default "
                        f"{profile.DEFAULT_STABLE_MONTHS}; under {profile.MIN_STABLE_MONTHS} stays off the card)")
    a.add_argument("--inferred", action="store_true", help="the line was inferred, not said by the user")
    add_json(a)
    a.set_defaults(func=run_add)

    d = verbs.add_parser(
        "remove", help="take a line off the card",
        description="Take a line off the card: give it as `quipu profile show` prints it (or its text, or a part "
        "of it that only one line holds). A commit that changes only the card, so `quipu undo COMMIT` puts the "
        "line back; nothing else is deleted (a memory the line came from stays).")
    d.add_argument("line", help='the line, e.g. "Working style: The user reviews every migration by hand"')
    add_json(d)
    d.set_defaults(func=run_remove)

    f = verbs.add_parser("fit", help="move lines of an over-full card to the store",
                         description="After a hand edit, demote the weakest lines until the card fits its caps.")
    add_json(f)
    f.set_defaults(func=run_fit)

    r = verbs.add_parser(
        "rebuild", help="rebuild the card from the store with the model",
        description="Ask the model for a fresh card from the store's memories, without showing it the old "
        "card, so orphaned claims fall away. Shows the diff; applies it with --yes, or after asking when "
        "run in a terminal. Lines the user said that the new card drops move to the store.")
    r.add_argument("--yes", action="store_true", help="apply without asking")
    add_model_options(r, max_calls=1, max_chars=60_000)
    add_json(r)
    r.set_defaults(func=run_rebuild)

    c = verbs.add_parser(
        "check", help="find contradictions across boundaries and queue them for review",
        description="Compare each profile line with the store's memories, and the store's rules with the "
        "project's CLAUDE.md; queue each contradiction for review (a commit each).")
    c.add_argument("--project", metavar="DIR", help="the project whose CLAUDE.md to compare (default: cwd)")
    c.add_argument("--dry-run", action="store_true", help="list contradictions without queueing them")
    add_json(c)
    c.set_defaults(func=run_check)


def run_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    card = profile.read_card(store)
    withheld = profile.withheld(store, card)
    if args.json:
        print_json({**card.to_json(), "withheld": [{"line": ln.entry, "reason": why} for ln, why in withheld.items()]})
        return 0
    print(card.render_card())
    if card.over_capacity():
        print("(over capacity: run `quipu profile fit` to move the weakest lines to the store)")
    for held, why in withheld.items():
        print(f"(not shown at session start, {why}; `quipu profile remove` takes it off: {held.entry})")
    for line in card.unparsed:
        print(f"(not a card line, ignored: {line})")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    lines, sha = profile_remove.remove_line(open_store(args), args.line)
    if args.json:
        print_json({"removed": [ln.entry for ln in lines], "commit": sha})
        return 0
    for line in lines:
        kept = f"; the memory it came from stays ({', '.join(line.memories)})" if line.memories else ""
        print(f"Removed from the card: {line.entry}{kept}")
    print(f"[commit {sha[:12]}; undo with `quipu undo {sha[:12]}`]")
    return 0


def _print_change(change: profile.Change, as_json: bool) -> None:
    if as_json:
        print_json(change.to_json())
        return
    if change.added:
        print(f"Added: {change.added.entry}")
    for line, mid in change.demoted:
        print(f"Moved to the store as {mid}: {line.entry}")
    if change.diverted:
        print(f"Not admitted to the card ({change.diverted[1]}); kept in the store as {change.diverted[0]}")
    if change.note:
        print(change.note[0].upper() + change.note[1:])


def run_add(args: argparse.Namespace) -> int:
    store = open_store(args)
    change = profile.add_line(store, _PREFIX_NAMES[args.prefix], args.text,
                              origin="session" if args.inferred else "user", stable_months=args.stable_months)
    _print_change(change, args.json)
    return 0


def run_fit(args: argparse.Namespace) -> int:
    change = profile.fit(open_store(args))
    _print_change(change, args.json)
    if not args.json and not change.demoted:
        print("The card fits its caps; nothing moved.")
    return 0


def run_rebuild(args: argparse.Namespace) -> int:
    store = open_store(args)
    model, budget = model_and_budget(args, store)
    proposal = profile_rebuild.propose_rebuild(store, MeteredModel(model, budget, store.cache_dir / "model-calls.jsonl"))
    apply = args.yes
    if args.json:
        if apply:
            change = profile_rebuild.apply_rebuild(store, proposal)
            print_json({**proposal.to_json(), "applied": True, "commits": change.commits})
        else:
            print_json({**proposal.to_json(), "applied": False})
        return 0
    diff = proposal.diff()
    print(diff or "The rebuilt card is the same as the current one.")
    for entry, why in proposal.refused:
        print(f"left off: {entry} ({why})")
    for line in proposal.to_demote:
        print(f"will move to the store (you said it): {line.entry}")
    if not diff and not proposal.to_demote:
        return 0
    if not apply and sys.stdin.isatty():
        apply = input("Apply this card? [y/N] ").strip().lower() in ("y", "yes")
    if not apply:
        print("Not applied (run again with --yes to apply).")
        return 0
    change = profile_rebuild.apply_rebuild(store, proposal)
    print(f"Applied in {len(change.commits)} commit(s).")
    return 0


def run_check(args: argparse.Namespace) -> int:
    store = open_store(args)
    project = Path(args.project) if args.project else Path.cwd()
    if args.project and not project.is_dir():
        raise FatalError(f"no folder {project}\n- pass the project's root with --project")
    tensions = consistency.find_tensions(store, project)
    commits = [] if args.dry_run else consistency.queue(store, tensions)
    if args.json:
        print_json({"tensions": [t.to_json() for t in tensions], "queued": len(commits)})
        return 0
    for t in tensions:
        print(f"[{t.why}] {t.memory}: {t.claim}\n    against {t.against} ({t.where}): {t.other}")
    if not tensions:
        print("No contradictions found.")
    elif args.dry_run:
        print(f"{len(tensions)} contradiction(s); not queued (--dry-run).")
    else:
        print(f"{len(tensions)} contradiction(s); {len(commits)} newly queued for review (`quipu review`).")
    return 0
