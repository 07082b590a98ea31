"""The viewer's web app: its routes, and ``serve`` that runs it on a loopback address.

Contract:
- ``make_app(viewer, address, port)`` is a Starlette app wrapped in ``guard.Guard``: no route runs
  for a request without the run's token, from another site, or to another host.
- Reads are GET; every change is a POST with the CSRF token, and one call into the same library
  function the command runs (`quipu review accept|reject`, `quipu undo COMMIT`, `quipu history
  forget`). A refusal (``FatalError``) is shown as its message on the page it came from (409);
  success redirects (303) to a page that says what was done.
- The stylesheet and the script are files of the package (``quipu/serve/static``), read through
  ``importlib.resources``; nothing is fetched from elsewhere.
- Handlers run one at a time on the server's loop (a single person's viewer), so the store and the
  open index are never used by two requests at once.
- ``serve`` binds the socket itself (port 0 picks a free one), prints the address with the token
  on one line (flushed), and runs until interrupted.
"""
from __future__ import annotations

import socket
import sys
from collections.abc import Awaitable, Callable
from importlib import resources

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from quipu.errors import FatalError, NotFound
from quipu.serve import guard, pages_history, pages_log, pages_memories, pages_review
from quipu.serve.html import Safe, h, href, message, page
from quipu.serve.state import Viewer

STATIC = {"style.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}
Handler = Callable[[Request], Awaitable[Response]]


def _int(value: str | None, default: int = 1) -> int:
    try:
        return max(1, int(value or default))
    except ValueError:
        return default


def make_app(viewer: Viewer, address: str, port: int) -> guard.Guard:
    store_name = str(viewer.store.root)

    def render(title: str, body: Safe, here: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(page(title, body, csrf=viewer.csrf, here=here, store=store_name), status_code=status)

    async def posted(request: Request) -> dict[str, str]:
        data = await request.form()
        fields = {k: v for k, v in data.items() if isinstance(v, str)}
        if not guard.same_secret(fields.get("csrf"), viewer.csrf):
            raise _Forbidden()
        return fields

    async def home(request: Request) -> Response:
        return RedirectResponse("/review", status_code=303)

    async def review_page(request: Request) -> Response:
        q = request.query_params
        return render("Review", pages_review.body(viewer, show_all=bool(q.get("all")), page=_int(q.get("page"))),
                      "/review")

    async def review_resolve(request: Request) -> Response:
        await posted(request)
        action = request.path_params["action"]
        if action not in ("accept", "reject"):
            return render("Review", message(f"unknown review action {action!r}", error=True), "/review", 404)
        try:
            sha = pages_review.resolve(viewer, request.path_params["rid"], action)
        except FatalError as exc:
            return render("Review", h("{m}{b}", m=message(str(exc), error=True), b=pages_review.body(viewer)),
                          "/review", 409)
        return RedirectResponse(href("/log", did="1", commit=sha), status_code=303)

    async def log_page(request: Request) -> Response:
        q = request.query_params
        notice = Safe("")
        if q.get("undone"):
            notice = pages_log.undone_notice(viewer, q["undone"], q.get("made", "").split(","))
        elif q.get("commit") and q.get("did"):
            described = pages_log.describe(viewer, [q["commit"]])
            if described:  # only a commit of the store is announced, in the store's own words
                notice = message(f"Done: {described[0]}\n- undo it with the Undo button below")
        return render("Audit log", pages_log.body(viewer, page=_int(q.get("page")), memory=q.get("memory", ""),
                                                  sweep=q.get("sweep", ""), action=q.get("action", ""),
                                                  notice=notice), "/log")

    async def log_undo(request: Request) -> Response:
        fields = await posted(request)
        sha = fields.get("commit", "").strip().lower()
        try:
            if not pages_log.HEX.match(sha):
                raise NotFound("not a commit id\n- use the Undo button of an entry of the audit log")
            made = pages_log.undo(viewer, sha)
        except FatalError as exc:
            return render("Audit log", pages_log.body(viewer, notice=message(str(exc), error=True)), "/log", 409)
        return RedirectResponse(href("/log", undone=sha, made=",".join(made)), status_code=303)

    async def commit_page(request: Request) -> Response:
        shown = pages_log.diff_html(viewer, request.path_params["sha"].lower())
        if shown is None:
            return render("Commit", message("no such commit in this store", error=True), "/log", 404)
        if request.query_params.get("fragment"):
            return HTMLResponse(shown)
        return render("Commit", shown, "/log")

    async def memories_page(request: Request) -> Response:
        q = request.query_params
        body = pages_memories.body(viewer, query=q.get("q", ""), cls=q.get("class", ""), label=q.get("label", ""),
                                   topic=q.get("topic", ""), page=_int(q.get("page")))
        return render("Memories", body, "/memories")

    async def memory_page(request: Request) -> Response:
        memory_id = request.path_params["mid"]
        try:
            body = pages_memories.memory_body(viewer, memory_id, request.query_params.get("prompt", ""))
        except FatalError as exc:
            return render("Memory", message(str(exc), error=True), "/memories", 404)
        return render(f"Memory {memory_id}", body, "/memories")

    async def recall_page(request: Request) -> Response:
        return render("Recall", pages_memories.recall_body(viewer, request.query_params.get("prompt", "")), "/memories")

    async def history_page(request: Request) -> Response:
        return render("Past conversations", pages_history.search_body(request.query_params.get("q", "")), "/history")

    async def history_turn(request: Request) -> Response:
        q = request.query_params
        turn = int(q["turn"]) if q.get("turn", "").isdigit() else None
        try:
            body = pages_history.turn_body(viewer, q.get("session", ""), turn)
        except FatalError as exc:
            return render("Past conversation", message(str(exc), error=True), "/history", 404)
        return render("Past conversation", body, "/history")

    async def history_forget(request: Request) -> Response:
        fields = await posted(request)
        try:
            body, _report = pages_history.forget_body(viewer, fields.get("session", ""),
                                                      confirm=fields.get("confirm") == "1")
        except FatalError as exc:
            return render("Forget", message(str(exc), error=True), "/history", 409)
        return render("Forget", body, "/history")

    async def health_page(request: Request) -> Response:
        return render("Health", pages_history.health_body(viewer), "/health")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found\n", status_code=404, media_type="text/plain")
        text = resources.files("quipu.serve").joinpath("static", name).read_bytes()
        return Response(text, media_type=STATIC[name])

    routes = [
        Route("/", home),
        Route("/review", review_page),
        Route("/review/{rid}/{action:str}", review_resolve, methods=["POST"]),
        Route("/log", log_page),
        Route("/log/undo", log_undo, methods=["POST"]),
        Route("/commit/{sha}", commit_page),
        Route("/memories", memories_page),
        Route("/memories/{mid}", memory_page),
        Route("/recall", recall_page),
        Route("/history", history_page),
        Route("/history/turn", history_turn),
        Route("/history/forget", history_forget, methods=["POST"]),
        Route("/health", health_page),
        Route("/static/{name}", static),
    ]

    async def forbidden(request: Request, exc: Exception) -> Response:
        return Response("the form's key is missing or stale: reload the page\n", status_code=403,
                        media_type="text/plain")

    app = Starlette(routes=routes, exception_handlers={_Forbidden: forbidden})
    return guard.Guard(app, token=viewer.token, address=address, port=port)


class _Forbidden(Exception):
    """A POST without this run's CSRF token."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on the loopback ``host`` (refuses any other) and ``port`` (0: any free one)."""
    address = guard.loopback(host)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        raise FatalError(f"cannot listen on {address} port {port}: {exc.strerror or exc}\n"
                         "- choose another port with --port N, or --port 0 for any free one") from exc
    sock.listen(64)
    return sock


def serve(viewer: Viewer, *, host: str = "127.0.0.1", port: int = 8765, open_browser: bool = False) -> None:
    import uvicorn

    sock = bind(host, port)
    address, bound = sock.getsockname()[:2]
    shown = f"[{address}]" if ":" in address else address
    link = f"http://{shown}:{bound}/review?token={viewer.token}"
    print(f"quipu serve: {link}", flush=True)
    print("  (this address carries this run's key; stop with Ctrl-C)", file=sys.stderr, flush=True)
    if open_browser:
        import webbrowser

        webbrowser.open(link)
    config = uvicorn.Config(make_app(viewer, address, bound), log_level="warning", access_log=False,
                            server_header=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        viewer.close()
        sock.close()
