"""`quipu serve`: a local viewer in the browser, on 127.0.0.1 only, over one store.

A person reviews the curator's queue side by side, reads the audit log as a timeline with each
commit's diff and undoes with a click, browses and searches memories (with what the prompt hook
would inject), searches past conversations and forgets a session, and reads the health checks.
Each change calls the same library function as the command line, so each is one commit that
`quipu undo` reverts (forgetting past turns is the one deletion, and asks first).

Modules: ``guard`` (loopback only, the run's token, Host and Origin, the CSP), ``html`` (the
escaping templates), ``state`` (the store and its open index), ``pages_*`` (one per area) and
``app`` (the routes and the server). The script and stylesheet are files in ``static/``.
"""
