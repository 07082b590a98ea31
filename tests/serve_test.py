"""`quipu serve` over plain HTTP: loopback only, the run's token, Host and Origin, CSRF, escaping,
and each button doing what its command does (the real server as a process, a real store)."""
from __future__ import annotations

import html
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from quipu.curate import review
from quipu.errors import FatalError
from quipu.serve import app, guard
from quipu.store.memory import memory_path
from quipu.store.store import Store
from testing.fixtures import git, hand_commit, make_store, memory, quipu
from testing.serve import HOSTILE, PAYLOADS, Served, hostile_store, reviewed_store, serving

CSRF = re.compile(r'<meta name="csrf" content="([0-9a-f]+)">')


def csrf_of(served: Served) -> str:
    status, page = served.get("/review")
    assert status == 200, page
    found = CSRF.search(page)
    assert found
    return found.group(1)


@pytest.fixture
def queued(tmp_path: Path) -> Iterator[tuple[Store, Served]]:
    store, _source = reviewed_store(tmp_path / "store", realistic=False)
    with serving(store) as served:
        yield store, served


def head(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.com", "127.0.0.1.evil.net", ""])
def test_the_server_refuses_to_listen_beyond_loopback(tmp_path: Path, host: str) -> None:
    store, _ = reviewed_store(tmp_path / "store", realistic=False) if host == "0.0.0.0" else (None, None)
    env = {"QUIPU_STORE": str(store.root)} if store else {}
    done = quipu("serve", "--host", host, "--port", "0", env=env)
    assert done.returncode == 1 and done.stdout == ""
    assert f"listens on this machine only, not on {host!r}" in done.stderr and "- leave out --host" in done.stderr
    with pytest.raises(FatalError):
        app.bind(host, 0)


def test_loopback_addresses_are_accepted() -> None:
    assert [guard.loopback(h) for h in ("127.0.0.1", "localhost", "127.0.0.2", "::1", "[::1]")] == \
        ["127.0.0.1", "127.0.0.1", "127.0.0.2", "::1", "::1"]
    sock = app.bind("127.0.0.1", 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()


def test_no_request_without_the_token_or_from_elsewhere_changes_anything(queued: tuple[Store, Served]) -> None:
    store, served = queued
    csrf = csrf_of(served)
    (item, *_rest) = review.items(store)
    before = head(store)
    accept = f"/review/{item.review_id}/accept"
    own = {"Origin": served.base}
    refused = [
        served.post(accept, {"csrf": csrf}, own, cookie=False),  # no token
        served.post(accept, {"csrf": csrf}, {**own, "Cookie": f"quipu_token_{served.port}=not-the-token"},
                    cookie=False),
        served.post(accept + "?token=not-the-token", {"csrf": csrf}, own, cookie=False),
        served.post(accept, {"csrf": csrf}, {"Origin": "http://evil.example"}),  # a foreign page's form
        served.post(accept, {"csrf": csrf}, {"Origin": "null"}),
        served.post(accept, {"csrf": csrf}, {"Origin": f"http://localhost.evil.example:{served.port}"}),
        served.post(accept, {"csrf": csrf}, {"Host": f"evil.example:{served.port}"}),  # DNS rebinding
        served.post(accept, {"csrf": csrf}, {"Host": "127.0.0.1"}),  # another port's origin
        served.post(accept, {"csrf": csrf}, {"Sec-Fetch-Site": "cross-site"}),
        served.post(accept, {"csrf": csrf}, {"Sec-Fetch-Site": "same-site"}),  # another port of localhost
        served.post(accept, {}, own),  # no CSRF token
        served.post(accept, {"csrf": csrf[:-1] + ("1" if csrf.endswith("0") else "0")}, own),  # a token one character off
        served.post("/log/undo", {"csrf": "", "commit": before}, own),
        served.post("/history/forget", {"session": "x", "confirm": "1"}, own),
    ]
    assert [status for status, _ in refused] == [403, 403, 403, 403, 403, 403, 421, 421, 403, 403, 403, 403, 403, 403]
    assert served.get("/review", cookie=False)[0] == 403
    assert served.get("/static/app.js", cookie=False)[0] == 403
    assert served.get(accept)[0] == 405  # a change is never a GET
    assert head(store) == before and review.find(store, item.review_id).is_open
    assert served.get("/review", {"Host": f"localhost:{served.port}"})[0] == 200


def test_the_printed_address_sets_a_strict_cookie_and_every_answer_a_strict_policy(
        queued: tuple[Store, Served]) -> None:
    import urllib.request

    _store, served = queued
    req = urllib.request.Request(f"{served.base}/memories?q=x&token={served.token}")

    class Stop(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.build_opener(Stop).open(req, timeout=30)
    assert answer.value.code == 303 and answer.value.headers["Location"] == "/memories?q=x"
    assert answer.value.headers["Set-Cookie"] == \
        f"quipu_token_{served.port}={served.token}; Path=/; HttpOnly; SameSite=Strict"
    with urllib.request.urlopen(urllib.request.Request(
            served.base + "/review", headers={"Cookie": f"quipu_token_{served.port}={served.token}"}), timeout=30) as ok:
        policy = ok.headers["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy and ok.headers["X-Content-Type-Options"] == "nosniff"
        page = ok.read().decode()
    assert "<script>" not in page and " style=" not in page and " on" + "click" not in page  # nothing inline


def test_accept_reject_and_undo_are_one_commit_each_like_the_commands(queued: tuple[Store, Served]) -> None:
    store, served = queued
    csrf = csrf_of(served)
    items = {i.memory: i for i in review.items(store)}
    before = head(store)
    status, _ = served.post(f"/review/{items['atlas-cdn'].review_id}/accept", {"csrf": csrf})
    assert status == 303
    status, _ = served.post(f"/review/{items['perm-rule'].review_id}/reject", {"csrf": csrf})
    assert status == 303
    # Resolving it again is the library's refusal, shown on the page.
    status, page = served.post(f"/review/{items['perm-rule'].review_id}/accept", {"csrf": csrf})
    assert status == 409 and f"review {items['perm-rule'].review_id} was already resolved" in html.unescape(page)
    applied = git(store.root, "log", "--format=%H", "-1", "--grep", "^quipu: supersede vpn-old by vpn-new").strip()
    status, _ = served.post("/log/undo", {"csrf": csrf, "commit": applied})
    assert status == 303
    subjects = git(store.root, "log", "--format=%s", f"{before}..HEAD").splitlines()
    assert subjects == [
        "quipu: undo supersede vpn-old by vpn-new",
        f"quipu: review {items['perm-rule'].review_id} rejected: perm-rule tension",
        f"quipu: supersede atlas-cdn by beacon-release (review {items['atlas-cdn'].review_id} accepted)",
    ]
    assert f"Quipu-Reverts: {applied}" in git(store.root, "log", "-1", "--format=%B")
    status, page = served.get("/memories/vpn-old")
    assert status == 200 and "status</td><td>active" in page
    # The store's first commit: the library refuses, the page says so and nothing changes.
    first = git(store.root, "rev-list", "--max-parents=0", "HEAD").strip()
    now = head(store)
    status, page = served.post("/log/undo", {"csrf": csrf, "commit": first})
    assert status == 409 and 'class="error"' in page and head(store) == now


def test_every_page_of_a_store_answers(queued: tuple[Store, Served]) -> None:
    store, served = queued
    sha = head(store)
    for path in ("/", "/review", "/review?all=1", "/log", "/log?page=2", "/log?memory=atlas-cdn", "/memories",
                 "/memories?class=fact", "/memories?q=cloudfront", "/memories?q=vpn&class=reference",
                 "/memories/atlas-cdn", "/memories/atlas-cdn?prompt=where+are+the+static+assets+served+from",
                 "/recall?prompt=cloudfront+cache", f"/commit/{sha}", f"/commit/{sha}?fragment=1", "/history",
                 "/history?q=orders", "/health", "/static/app.js", "/static/style.css"):
        status, page = served.get(path)
        assert status in (200, 303), (path, status, page[-2000:])
    assert served.get("/memories/no-such-memory")[0] == 404
    assert served.get("/commit/" + "0" * 40)[0] == 404
    assert served.get("/static/../../quipu.toml")[0] == 404
    page = served.get("/memories/atlas-cdn?prompt=where+are+the+static+assets+served+from")[1]
    assert "What the hook would inject" in page and "atlas-cdn (this memory)" in page


def test_the_memories_list_filters_by_class_label_and_topic(queued: tuple[Store, Served]) -> None:
    store, served = queued
    from quipu.index import index

    def listed(query: str) -> list[str]:
        status, page = served.get("/memories?" + query)
        assert status == 200, page[-1000:]
        return re.findall(r'<a href="/memories/([^"?]+)">', page)

    every = {r["id"]: r for r in index.rows(store, "SELECT id, class, labels, tags FROM memories")}
    assert sorted(listed("")) == sorted(every)
    assert sorted(listed("class=rule")) == sorted(i for i, r in every.items() if r["class"] == "rule")
    assert listed("label=dead-path") == ["ci-cache"]
    assert sorted(listed("topic=permissions")) == sorted(i for i, r in every.items()
                                                         if "permissions" in r["tags"].split(" | "))
    assert listed("topic=permission") == [] and listed("label=%25") == []  # whole values; LIKE's own signs are text
    found = listed("q=cloudfront&class=fact")
    assert "atlas-cdn" in found and all(every[i]["class"] == "fact" for i in found)
    assert "cors-staging" in listed("q=cloudfront") and every["cors-staging"]["class"] != "fact" \
        and "cors-staging" not in found  # filtered out


def test_a_hostile_store_shows_as_text_in_the_raw_html(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects"
    store = hostile_store(tmp_path / "store", projects)
    hostile_commit = head(store)
    with serving(store) as served:
        pages = {path: served.get(path) for path in (
            "/review", "/log", "/memories", "/memories?q=window", "/memories/hostile-one",
            "/memories/hostile-one?prompt=" + "window+pwned+script", f"/commit/{hostile_commit}",
            "/history?q=escape", "/history/turn?session=7e57e57e&turn=0", "/health", "/review?all=1")}
    for path, (status, page) in pages.items():
        assert status == 200, (path, page[-1000:])
        for payload in PAYLOADS:
            if "<" in payload or '"' in payload:  # the plain ones show as they are, as text
                assert payload not in page, (path, payload)
        for markup in ("<script>", "<img", "<svg", "<quipu-memory", 'href="javascript', "onerror=\""):
            assert markup not in page, (path, markup)
    everywhere = ("/review", "/memories/hostile-one", "/history/turn?session=7e57e57e&turn=0")
    for path in everywhere:
        assert html.escape(PAYLOADS[0]) in pages[path][1], path
    assert html.escape(HOSTILE) in pages["/memories/hostile-one"][1]
    assert "{csrf} {body} %(x)s" in pages["/review"][1]  # a template's own fields stay text too
    assert html.escape(PAYLOADS[1]) in pages["/log"][1]  # the commit's trailers


def test_forgetting_a_session_asks_first(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects"
    store = hostile_store(tmp_path / "store", projects)
    from quipu.history import search_history

    assert search_history("escape")
    with serving(store) as served:
        csrf = csrf_of(served)
        status, page = served.post("/history/forget", {"csrf": csrf, "session": "7e57e57e"})
        assert status == 200 and "This would remove 2 turns, for good" in page
        assert search_history("escape")  # nothing gone yet
        status, page = served.post("/history/forget", {"csrf": csrf, "session": "7e57e57e", "confirm": "1"})
        assert status == 200 and "Removed 2 turns" in page
    assert search_history("escape") == []


def test_the_command_is_documented_and_refuses_a_missing_store(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "quipu", "serve", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--port" in done.stdout and "--open" in done.stdout
    missing = quipu("serve", "--port", "0", env={"QUIPU_STORE": str(tmp_path / "nowhere")})
    assert missing.returncode == 1 and "no memory store" in missing.stderr


ENTRY = re.compile(r'<li class="entry" data-commit="([0-9a-f]{40})">(.*?)</li>', re.S)


def entries(served: Served, path: str) -> dict[str, str]:
    """Each entry of an audit log page, by its commit's full id."""
    status, page = served.get(path)
    assert status == 200, page[-1000:]
    return dict(ENTRY.findall(page))


def test_the_log_shows_each_commit_by_what_it_did_not_by_its_trailers(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    added = store.add(memory("api-port", "API port", "The API listens on port 8080"))
    store.add(memory("db-owner", "DB owner", "Maria owns the database"))
    store.add(memory("ci-cache", "CI cache", "The CI cache lives in the runner's volume"))
    honest = store.label("api-port", "reviewed", sweep="sw-honest")
    claim = ("quipu: label api-port reviewed\n\nQuipu-Action: label\nQuipu-Memory: api-port\nQuipu-Label: reviewed\n"
             "Quipu-Sweep: sw-forged\n")
    owner = store.root / memory_path("db-owner")
    mallory = "Mallory <mallory@example.com>"
    edit = hand_commit(store.root, claim, {memory_path("db-owner"): owner.read_bytes().replace(b"Maria", b"Ana")},
                       author=mallory)
    removal = hand_commit(store.root, claim, {memory_path("ci-cache"): None}, author=mallory)
    with serving(store) as served:
        log = entries(served, "/log")
        by_memory = {m: entries(served, f"/log?memory={m}") for m in ("api-port", "db-owner")}
        labels, forged_sweep = entries(served, "/log?action=label"), entries(served, "/log?sweep=sw-forged")
    message = git(store.root, "log", "-1", "--format=%s", honest).strip()
    shown = html.unescape(log[honest])
    assert '<span class="action">label</span> <a href="/memories/api-port" class="id">api-port</a>' in shown
    assert f'labelled api-port reviewed (message: "{message}")' in shown
    assert "decided by the curator (sweep sw-honest)" in shown and '<span class="k">sweep</span> sw-honest' in shown
    for forged, did, gone in ((edit, "changed the text of db-owner", "db-owner"), (removal, "removed ci-cache", "ci-cache")):
        shown = html.unescape(log[forged])
        assert f"claims label of api-port (reviewed); {did} (not verified)" in shown, shown
        assert '<span class="action">label</span>' not in shown and "/memories/api-port" not in shown
        assert f'href="/memories/{gone}"' in shown and "decided by Mallory" in shown
        assert "curator" not in shown and "sw-forged" not in shown.split("(not verified)")[1]
        assert 'class="undo"' in shown  # an ordinary commit: it can be undone
    assert 'class="undo"' in log[added]
    # The memory's own log lists what changed it; credit and chips follow the same rule.
    assert honest in by_memory["api-port"] and edit not in by_memory["api-port"] and removal not in by_memory["api-port"]
    shown = html.unescape(by_memory["db-owner"][edit])
    assert '<span class="action">edit</span>' in shown and "decided by Mallory" in shown and "sw-forged" not in shown
    assert "decided by the curator (sweep sw-honest)" in by_memory["api-port"][honest]
    # A filter by trailer keeps only the commits that did what their trailers say.
    assert list(labels) == [honest] and forged_sweep == {}
