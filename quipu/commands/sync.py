"""`quipu sync [REMOTE]`: share the store through a git remote (fetch, merge under the sync policy, push)."""
from __future__ import annotations

import argparse

from quipu.sync import history, sync
from quipu.sync.policy import shown as printable
from quipu.commands._common import add_json, open_store
from quipu.output import print_json

# Each kind of change that came in (``quipu.sync.described``), counted as the sync summary says it.
_ACTIONS = (("add", "added"), ("edit", "text edited"), ("supersede", "superseded"), ("retract", "retracted"),
            ("label", "labelled"), ("unlabel", "unlabelled"), ("review", "for review"),
            ("review-resolved", "reviewed"), ("decision", "decided"), ("undo", "undone"),
            ("undo-unverified", "claimed undo, not verified"), ("remove", "removed"),
            ("decision-removed", "decisions removed"), ("decision-changed", "decisions changed"),
            ("profile", "profile card"), ("skill", "skill files"), ("file", "other files"), ("put-back", "put back"))
SHOWN_COMMITS = 10  # incoming commits listed one by one (and every one whose trailers claim what it did not do)


SHOWN_PATHS = 10  # refused files listed per reason; --json lists every one


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "sync",
        help="share the store with a git remote: fetch, merge, push",
        description="Fetch the remote's branch, merge it into the store and push the result, holding the "
        "store's writer lock throughout (quipu writers here wait; nothing they write is lost); starts over "
        "when the remote moved meanwhile. What came in is printed. Files outside the store's schema (symbolic "
        "links, executables, paths quipu never writes, files that fail their kind's check, settings) are "
        "refused and listed, and the rest still merges, each with the remote commit that made it. A removal "
        "is applied only when it is the exact inverse of the commit this store got a decision from (what a "
        "commit does counts, not what its message says; a removal a merge carries is judged by the commit "
        "that made it), and no memory file is ever removed. "
        "A memory edited on both sides keeps both texts: the newer edit stays at the id, "
        "the older becomes <id>-<hex>, superseded by it in an ordinary commit that `quipu undo` reverts; "
        "where one side only added aliases, one memory keeps the other's text with both sides' aliases. "
        "The profile card edited on both sides is merged line by line. "
        "A remote whose branch was rewritten (force-pushed) is refused and nothing here changes. "
        "A remote commit whose tree holds a name git itself refuses (.git, ..) is not taken, nor anything "
        "built on it: what came before it merges, nothing is pushed, and the sync exits 1 with how to take "
        "it off the remote. See docs/sync.md.",
    )
    p.add_argument("remote", nargs="?", help="the git remote to sync with (default: origin, or the only remote)")
    p.add_argument("--set-remote", metavar="URL", help="first set the remote's URL (creating the remote if needed)")
    p.add_argument("--no-push", action="store_true", help="fetch and merge only; push nothing")
    p.add_argument("--accept-rewrite", action="store_true",
                   help="merge with a remote whose branch was rewritten (force-pushed) instead of refusing")
    p.add_argument("--quiet", action="store_true", help="print nothing unless something was refused or failed")
    add_json(p)
    p.set_defaults(func=run)


def _named(result: sync.SyncResult, action: str) -> str:
    """The memories (or commits, or files) of one line of the counts."""
    if action == "undo-unverified":
        return "commit " + ", ".join(i.commit[:12] for i in result.incoming if i.kind == action)
    if action == "put-back":
        names = [r.memory for r in result.restored]
    elif action == "undo":  # the memories it took things back from; the retractions it made are counted as such
        names = [c.memory for i in result.incoming if i.reverts for c in i.changes
                 if not c.refused and c.kind != "retract"]
    else:
        names = [c.memory + (f" ({'by ' if action == 'supersede' else ''}{c.detail})" if c.detail else "")
                 if c.kind not in ("file", "skill") else c.detail
                 for i in result.incoming if not i.reverts or action == "retract"
                 for c in i.changes if c.kind == action and not c.refused]
    names = sorted(set(names) - {"store"})
    return ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def print_result(result: sync.SyncResult, *, quiet: bool = False) -> None:
    counts = result.counts()
    came = result.came()
    if not quiet:
        changes = len(came) + len({r.kept_by for r in result.restored} - {i.commit for i in came})
        line = f"Synced {result.store} with {result.remote} ({result.branch})"
        if changes:
            line += f": {changes} commit(s) came in, by {', '.join(result.authors())}"
        else:
            line += ": nothing came in"
        print(line)
        for action, word in _ACTIONS:
            if counts.get(action):
                print(f"  {word:<12} {counts[action]:>4}  {_named(result, action)}")
    listed = [i for n, i in enumerate(came) if (n < SHOWN_COMMITS and not quiet) or not i.verified]
    if listed:
        print("What each commit did, read from the commit itself:" if not quiet else
              "Commits whose trailers claim what they did not do:")
        for came_in in listed:
            print(f"  {came_in.commit[:12]}  {printable(came_in.author)}: {came_in.summary}"
                  + ("" if came_in.verified else " (not verified)"))
        if len(came) > len(listed) and not quiet:
            print(f"  and {len(came) - len(listed)} more (`--json` lists every one)")
    if not quiet:
        for kept_by in dict.fromkeys(r.kept_by for r in result.restored):
            put = [r for r in result.restored if r.kept_by == kept_by]
            print(f"Put back {len(put)} file(s) this store had removed: the merge {kept_by[:12]} "
                  f"({put[0].author}) kept them against their removal, so they are here again "
                  f"(`git -C {result.store} show {kept_by[:12]}` says why)")
            for r in put[:SHOWN_PATHS]:
                print(f"  {r.path} ({r.memory})" + (f": removed by commit {r.removed_by[:12]}" if r.removed_by else ""))
            if len(put) > SHOWN_PATHS:
                print(f"  and {len(put) - SHOWN_PATHS} more (`--json` lists every one)")
        for item in result.kept_both:
            print(f"Kept both versions of {item.memory} (edited on both sides): the {item.newer} edit is newer "
                  f"and stays; the older text is {item.copy}, superseded by it (`quipu undo --memory {item.copy}` "
                  "keeps both active)")
    if result.refused:
        print(f"Refused {len(result.refused)} file(s) from {result.remote}; the rest was merged:")
        groups: dict[tuple[str, str], list[str]] = {}
        for refusal in result.refused:
            groups.setdefault((refusal.commit, printable(refusal.reason)), []).append(printable(refusal.path))
        for (commit, reason), paths in groups.items():
            if commit and commit[:12] not in reason:
                reason += f" (commit {commit[:12]})"
            if len(paths) == 1:
                print(f"  {paths[0]}: {reason}")
                continue
            print(f"  {len(paths)} files: {reason}")
            for path in paths[:SHOWN_PATHS]:
                print(f"    {path}")
            if len(paths) > SHOWN_PATHS:
                print(f"    and {len(paths) - SHOWN_PATHS} more (`--json` lists every one)")
        removals: dict[str, int] = {}
        for refusal in result.refused:
            if refusal.commit and refusal.reason.startswith("removed by"):
                removals[refusal.commit] = removals.get(refusal.commit, 0) + 1
        for commit, n in removals.items():
            where = f"here and, with this merge, on {result.remote}" if result.pushed else "here"
            print(f"Refused the removal of {n} file(s) by commit {commit[:12]}: they stay {where} "
                  f"(see `git -C {result.store} show --stat {commit[:12]}`)")
    if result.held_back:
        held = [r for r in result.refused if r.reason == history.REASON]
        first = held[0].commit if held else result.held_back  # held paths are printable already
        print(f"Not taken from {result.remote}: commit {first[:12]} and every commit built on it (its tip is "
              f"{result.held_back[:12]}), as its tree holds {held[0].path if held else 'a name git refuses'}; what came "
              "before it is merged here, and nothing was pushed (the remote would refuse it until that commit is gone)\n"
              f"- see what it holds: `git -C {result.store} show --stat {first[:12]}`\n"
              f"- take it off {result.remote}: `git -C {result.store} push --force-with-lease="
              f"refs/heads/{result.branch}:{result.held_back} -- {result.remote} {result.branch}` puts this "
              "store's branch there (commits built on it go too: make them again where they were made); "
              "then `quipu sync` works again on every clone")
    if not quiet:
        print(f"Pushed {result.branch} to {result.remote}" if result.pushed else "Pushed nothing")


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.set_remote:
        sync.set_remote(store, args.set_remote, args.remote or sync.DEFAULT_REMOTE)
    result = sync.sync(store, args.remote, push=not args.no_push, accept_rewrite=args.accept_rewrite)
    if args.json:
        print_json(result.to_json())
    else:
        print_result(result, quiet=args.quiet)
    return 1 if result.held_back else 0
