"""The command server: the modules of the one-memory commands kept loaded, and the light client
the ``quipu`` program runs first.

A short command such as ``quipu add`` spends most of its time loading quipu and its libraries. The
command server is one long-lived process per quipu home that has them loaded; ``quipu`` hands it
the command over ``$QUIPU_HOME/run/command.sock`` with its standard streams, and a child forked
from the server runs the command as the process itself would have (``client.py``, ``server.py``).
"""
