"""`quipu verify` and `quipu sweep` read a store as untrusted input, through the real CLI.

A store is shared through git remotes: nothing one memory says may stop the check of the others,
a label committed to the store names roots by name (never this machine's folders), and the
commands say what they could not check and how to fix it. Real stores, real subprocesses, an
isolated home (``quipu_env``); the model, where one is needed, is a `command:` script that
answers from a JSON file.
"""
from __future__ import annotations

import http.server
import json
import shlex
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from quipu.curate.corpus import load
from quipu.curate.deterministic import find_dead_paths
from quipu.probes import Context
from quipu.store.store import Store
from quipu.verify.verify import public_detail
from testing.fixtures import add_all, git, make_store, memory, quipu

# A `command:` model: answers, for the memory named in the prompt, the raw JSON text kept for it.
_MODEL_SCRIPT = """
import json, re, sys
request = json.load(sys.stdin)
memory_id = re.search(r'<memory id="([^"]+)">', request["prompt"]).group(1)
answers = json.load(open(sys.argv[1]))
print(answers.get(memory_id, '{"claims": []}'))
"""


def command_model(tmp_path: Path, answers: dict[str, str]) -> str:
    """A `--model` spec whose answer for each memory id is the given raw text."""
    script = tmp_path / "model.py"
    script.write_text(_MODEL_SCRIPT)
    file = tmp_path / "answers.json"
    file.write_text(json.dumps(answers))
    return f"command:{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(file))}"


def claims_of(summary: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    return {r["id"]: [(c["status"], c["detail"]) for c in r["claims"]] for r in summary["memories_checked"]}


def added_id(proc: Any) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(proc.stdout.split()[1])


def committed_events(store_root: Path) -> str:
    """Every event the store's history holds, files and commit messages: what `quipu sync` pushes
    to a teammate besides the memories themselves."""
    return git(store_root, "log", "-p", "--all", "--format=%B", "--", "events")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "app"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    return root


# ---------------------------------------------------------------- 1. what a memory says stops nothing


def test_an_ipv6_url_is_refused_alone_and_retracting_it_is_not_needed(quipu_env: Path, project: Path) -> None:
    """The audit's case: one memory with http://[::1]:8080/ made `verify --all` exit 3."""
    assert quipu("init").returncode == 0
    added_id(quipu("add", "-t", "Dev server", "The dev server listens on http://[::1]:8080/ when IPv6 is on"))
    added_id(quipu("add", "-t", "Entry point", "Start at `src/app.py`."))

    proc = quipu("verify", "--all", "--root", f"project={project}", "--json")

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    details = [c for claims in claims_of(summary).values() for c in claims]
    assert sorted(details) == [("pass", "src/app.py (under project) exists"), ("refused", "url: ::1 is loopback")]


class _IPv6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:  # noqa: N802 - the name http.server calls
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_ipv6_url_is_checked_whole_where_loopback_is_allowed(tmp_path: Path) -> None:
    """Extracted as `http://[::1`, the URL broke the run; taken whole, it is a URL like any other."""
    try:
        server = _IPv6Server(("::1", 0), _Quiet)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://[::1]:{server.server_address[1]}/"
    store = make_store(tmp_path / "store")
    add_all(store, [memory("dev-server", "Dev server", f"The dev server listens on {url} when IPv6 is on.\n")])
    try:
        allowed = quipu("--store", str(store.root), "verify", "--all", "--allow-loopback", "--json")
    finally:
        server.shutdown()
        server.server_close()

    assert allowed.returncode == 0, allowed.stderr
    assert claims_of(json.loads(allowed.stdout)) == {"dev-server": [("pass", f"{url} answered 200 to HEAD")]}


HOSTILE_URLS = {
    "http://[::1]:8080/": "::1 is loopback",
    "http://[::ffff:127.0.0.1]/": "127.0.0.1 is loopback",
    "http://[fe80::1]/": "fe80::1 is link-local",
    "http://[fd12:3456::1]/": "private or reserved",
    "http://[::127.0.0.1]/": "carries the IPv4 address 127.0.0.1",
    "http://[2002:7f00:1::]/": "carries the IPv4 address 127.0.0.1",
    "http://[64:ff9b::a9fe:a9fe]/": "cloud metadata address",
    "http://ip6-localhost:8080/": "ip6-localhost is loopback",
    "http://[::1 is where it was": "not a URL (ValueError: Invalid IPv6 URL)",
    "http://[not-an-address]/": "not a URL (ValueError:",
    "http://[v1.x]/": "brackets hold no IPv6 address",
    "http://example.com:99999/": "bad port",
    "http://example.com:99999999999999999999999999999999999999/": "bad port",
    "http://exämple.com/x": "characters a URL may not hold",
}


def test_every_url_a_parser_rejects_or_that_reaches_this_machine_is_refused_and_the_rest_is_checked(
    tmp_path: Path, project: Path
) -> None:
    store = make_store(tmp_path / "store")
    notes = [memory(f"url-{n:02d}", f"Note {n}", f"The service is at {url} these days.\n")
             for n, url in enumerate(HOSTILE_URLS)]
    add_all(store, [*notes, memory("entry-point", "Entry point", "Start at `src/app.py`; not `src/gone.py`.\n")])

    proc = quipu("--store", str(store.root), "verify", "--all", "--root", f"project={project}", "--json")

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    found = claims_of(summary)
    for n, reason in enumerate(HOSTILE_URLS.values()):
        [(status, detail)] = found[f"url-{n:02d}"]
        assert status == "refused" and reason in detail, (n, detail)
    assert found["entry-point"] == [("pass", "src/app.py (under project) exists"),
                                    ("fail", "src/gone.py (under project) does not exist")]
    assert (summary["refused"], summary["labelled"]) == (len(HOSTILE_URLS), 1)
    logged = [json.loads(line) for line in (store.cache_dir / "verify.log").read_text().splitlines()]
    assert sum(e["kind"] == "refused" for e in logged) == len(HOSTILE_URLS)


def test_a_model_s_answer_no_parser_can_read_is_refused_claim_by_claim(tmp_path: Path, project: Path) -> None:
    """Lone surrogates, a number of a hundred digits, a nest too deep to read: each claim (or, for
    an answer nothing can parse, that memory) is set aside with the reason; the others are checked."""
    store = make_store(tmp_path / "store")
    add_all(store, [memory("odd-claims", "Odd claims", "Anything.\n"), memory("deep-answer", "Deep", "Anything.\n"),
                    memory("plain-claim", "Plain", "Start at `src/app.py`.\n")])
    odd = ('{"claims": ['
           '{"probe": "path-exists", "args": {"path": "notes\\ud800.md"}, "quote": "q\\udc00"},'
           '{"probe": "path-exists", "args": {"root": "/\\ud800", "path": "x"}},'
           '{"probe": "\\ud800", "args": {}},'
           '{"probe": "url-alive", "args": {"url": "http://[::1"}},'
           '{"probe": "pr-merged", "args": {"repo": "octo/hello", "number": ' + "9" * 100 + "}}"
           "]}")
    deep = '{"claims": [' + "[" * 100_000 + "]" * 100_000 + "]}"
    plain = '{"claims": [{"probe": "path-exists", "args": {"root": "project", "path": "src/app.py"}}]}'
    model = command_model(tmp_path, {"odd-claims": odd, "deep-answer": deep, "plain-claim": plain})

    proc = quipu("--store", str(store.root), "verify", "--all", "--model", model, "--root", f"project={project}",
                 "--json")

    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    found = claims_of(summary)
    assert [status for status, _ in found["odd-claims"]] == ["refused"] * 5
    assert "no character" in found["odd-claims"][0][1] and "no character" in found["odd-claims"][1][1]
    assert "not a URL" in found["odd-claims"][3][1] and "outside 1.." in found["odd-claims"][4][1]
    assert found["plain-claim"] == [("pass", "src/app.py (under project) exists")]
    deep_report = next(r for r in summary["memories_checked"] if r["id"] == "deep-answer")
    assert deep_report["error"] and summary["extraction_errors"] == 1
    shown = quipu("--store", str(store.root), "show", "odd-claims")
    assert shown.returncode == 0 and "Claims:" in shown.stdout


# ---------------------------------------------------------------- 2. retracted memories


def test_verify_all_leaves_retracted_memories_out_and_an_id_still_checks_one(tmp_path: Path, project: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("kept-note", "Kept", "Start at `src/app.py`.\n"),
                    memory("taken-back", "Taken back", "It was in `src/gone.py`.\n")])
    assert quipu("--store", str(store.root), "retract", "taken-back").returncode == 0

    every = quipu("--store", str(store.root), "verify", "--all", "--root", f"project={project}", "--json")
    one = quipu("--store", str(store.root), "verify", "taken-back", "--root", f"project={project}", "--json")

    assert every.returncode == 0, every.stderr
    assert [r["id"] for r in json.loads(every.stdout)["memories_checked"]] == ["kept-note"]
    assert one.returncode == 0, one.stderr
    assert claims_of(json.loads(one.stdout)) == {"taken-back": [("fail", "src/gone.py (under project) does not exist")]}
    help_text = quipu("verify", "--help").stdout
    assert "retracted and superseded ones are left out" in " ".join(help_text.split())


# ---------------------------------------------------------------- 3. details committed name no local folder


def test_labels_committed_to_the_store_name_roots_never_this_machine_s_folders(
    tmp_path: Path, quipu_env: Path
) -> None:
    """Event files go to teammates with `quipu sync`: no home, no folder layout in a detail."""
    project = quipu_env / "code" / "app"
    (project / "plain").mkdir(parents=True)
    store = make_store(tmp_path / "store")
    add_all(store, [
        memory("home-helper", "Helper", "My helper is `.bashrc.d/x.sh`.\n", project=str(quipu_env)),
        memory("app-paths", "App", "Start at `src/gone.py`.\n", project=str(project)),
        memory("named-repo", "Repo", "The fix is in commit abc1234.\n", project=str(project)),
        memory("plain-repo", "Plain", "Branch main of the plain folder.\n", project=str(project)),
        memory("under-home", "Deploy", f"Deploy with `{quipu_env}/bin/deploy.sh`.\n"),
    ])
    model = command_model(tmp_path, {
        "home-helper": '{"claims": [{"probe": "path-exists", "args": {"root": "' + str(quipu_env) + '", '
                       '"path": ".bashrc.d/x.sh"}}]}',
        "app-paths": '{"claims": [{"probe": "path-exists", "args": {"root": "' + str(project) + '", '
                     '"path": "src/gone.py"}}]}',
        "named-repo": '{"claims": [{"probe": "git-commit-exists", "args": {"root": "' + str(project) + '", '
                      '"repo": "plain", "commit": "abc1234"}}]}',
        "plain-repo": '{"claims": [{"probe": "git-branch-exists", "args": {"root": "' + str(project) + '", '
                      '"repo": "plain", "branch": "main"}}]}',
        "under-home": '{"claims": [{"probe": "path-exists", "args": {"path": "' + f"{quipu_env}/bin/deploy.sh"
                      + '"}}]}',
    })

    verified = quipu("--store", str(store.root), "verify", "--all", "--model", model, "--json")
    swept = quipu("--store", str(store.root), "sweep", "--model", "none", "--json")

    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["labelled"] == 5
    assert swept.returncode == 0, swept.stderr
    assert {f["memory"] for f in json.loads(swept.stdout)["findings"]} == {"home-helper", "app-paths"}
    history = committed_events(store.root)
    assert "path-exists: .bashrc.d/x.sh (under the project) does not exist" in history
    assert "plain (under the project) is not a git repository" in history
    assert "path-exists: ~/bin/deploy.sh does not exist" in history
    assert "missing: src/gone.py (under the project)" in history
    assert str(tmp_path) not in history


def test_a_dead_path_under_the_home_is_shown_from_the_tilde(tmp_path: Path) -> None:
    """The sweep judges absolute paths only off volatile mounts such as /tmp: a home of /usr stands in."""
    store = make_store(tmp_path / "store")
    add_all(store, [memory("abs-dead", "Dead absolute", "The old config was `/usr/lib/quipu-test-gone/app.conf`.\n")])

    [finding] = find_dead_paths(load(store), home=Path("/usr"))

    assert finding.detail == "missing: ~/lib/quipu-test-gone/app.conf"
    assert finding.paths == ("/usr/lib/quipu-test-gone/app.conf",)  # as the memory writes it, for the ledger


def test_a_detail_for_the_store_names_each_root_and_the_home_whatever_printed_it(tmp_path: Path) -> None:
    """The backstop under every probe: a folder a tool printed into a detail becomes its root's name."""
    home, shop, linked = tmp_path / "home", tmp_path / "code" / "shop", tmp_path / "link"
    shop.mkdir(parents=True)
    linked.symlink_to(shop)
    ctx = Context(roots={"shop": str(linked), str(home / "app"): str(home / "app")}, home=str(home))

    assert public_detail(f"x: {shop}/sub is not a git repository", ctx) == "x: shop/sub is not a git repository"
    assert public_detail(f"x: y (under {home}/app) does not exist", ctx) == "x: y (under the project) does not exist"
    assert public_detail(f"x: {home}/.bashrc, {home}", ctx) == "x: ~/.bashrc, ~"
    assert public_detail(f"x: {tmp_path}/code/shopping/y", ctx) == f"x: {tmp_path}/code/shopping/y"


# ---------------------------------------------------------------- 4, 5. the command line


@pytest.mark.parametrize(("argv", "message"), [
    ([], "give their ids, or pass --all"),
    (["--all", "some-note"], "give ids or --all, not both"),
    (["--all", "--model", "scripted"], "use command:<command line>"),
])
def test_arguments_that_do_not_go_together_are_usage_errors(tmp_path: Path, argv: list[str], message: str) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("some-note", "Note", "x\n")])

    proc = quipu("--store", str(store.root), "verify", *argv)

    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_the_scripted_model_is_not_offered_on_the_command_line(tmp_path: Path) -> None:
    """It answers only what a Python caller queued; `command:` is how a command line scripts answers."""
    store = make_store(tmp_path / "store")
    add_all(store, [memory("some-note", "Note", "x\n")])

    for command in ("verify", "sweep"):
        assert "scripted" not in quipu(command, "--help").stdout
    swept = quipu("--store", str(store.root), "sweep", "--model", "scripted")
    configured = quipu("--store", str(store.root), "sweep", env={"QUIPU_MODEL": "scripted"})

    assert swept.returncode == 2 and "command:<command line>" in swept.stderr
    assert configured.returncode == 1 and "$QUIPU_MODEL" in configured.stderr
    assert "enqueue()" not in swept.stderr + configured.stderr


def test_a_model_that_cannot_answer_stops_the_run_with_the_fix(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("some-note", "Note", "x\n")])

    proc = quipu("--store", str(store.root), "verify", "--all", "--model", f"command:{tmp_path / 'no-such-model'}")

    assert proc.returncode == 1
    assert "verification stopped early" in proc.stderr and "model command not found" in proc.stderr


# ---------------------------------------------------------------- 6. the fix for unknown claims, in text


def test_the_text_report_says_how_to_check_what_it_could_not(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory("entry-point", "Entry point", "Start at `src/app.py`.\n")])

    proc = quipu("--store", str(store.root), "verify", "--all")

    assert proc.returncode == 0, proc.stderr
    assert "Not checked (unknown):" in proc.stdout
    assert "1 claim: project root 'project' has no folder in this run: pass --root project=PATH" in proc.stdout


# ---------------------------------------------------------------- 7. sweep's root is verify's


def test_sweep_judges_relative_paths_under_the_project_the_store_sits_in(project: Path) -> None:
    store = make_store(project / ".quipu")
    add_all(store, [memory("entry-point", "Entry point", "Start at `src/app.py`; the old `src/gone.py` too.\n")])

    proc = quipu("sweep", "--model", "none", "--json", cwd=project)
    verified = quipu("verify", "--all", "--json", cwd=project)

    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["memory"], f["detail"]) for f in report["findings"]] == [
        ("entry-point", "missing: src/gone.py (under the project)")]
    assert report["unjudged_paths"] == {"paths": 0, "memories": 0}
    assert json.loads(verified.stdout)["failed"] == 1  # the same root, the same dead path


def test_sweep_says_how_many_relative_paths_it_could_not_judge(tmp_path: Path, project: Path) -> None:
    store: Store = make_store(tmp_path / "store")
    add_all(store, [memory("no-root", "Relative", "See `src/gone.py` and docs/missing.md.\n"),
                    memory("own-root", "Own root", "See `src/gone.py`.\n", project=str(project))])

    text = quipu("--store", str(store.root), "sweep", "--model", "none", "--dry-run")
    data = quipu("--store", str(store.root), "sweep", "--model", "none", "--dry-run", "--json")
    rooted = quipu("--store", str(store.root), "sweep", "--model", "none", "--dry-run", "--json",
                   "--project-root", str(project))

    assert text.returncode == 0, text.stderr
    assert "2 relative paths in 1 memory not judged" in text.stdout and "--project-root PATH" in text.stdout
    assert json.loads(data.stdout)["unjudged_paths"] == {"paths": 2, "memories": 1}
    assert json.loads(rooted.stdout)["unjudged_paths"] == {"paths": 0, "memories": 0}
    assert {f["memory"] for f in json.loads(rooted.stdout)["findings"]} == {"no-root", "own-root"}


def test_session_end_judges_the_session_s_paths_under_the_project_as_sweep_does(project: Path) -> None:
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "app.py").write_text("")
    store = make_store(project / ".quipu")
    add_all(store, [memory("entry-point", "Entry point", "Start at `src/app.py`; the old `src/gone.py` too.\n",
                           session="sess-9")])

    done = quipu("session-end", "--session", "sess-9", "--model", "command:/bin/false", "--json", cwd=project)

    assert done.returncode == 0, done.stderr
    assert [(f["memory"], f["detail"]) for f in json.loads(done.stdout)["findings"]] == [
        ("entry-point", "missing: src/gone.py (under the project)")]
