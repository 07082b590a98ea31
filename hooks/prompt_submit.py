"""Claude Code UserPromptSubmit hook: quipu recall (quipu/prompt/hook.py). Run as `python -I -S <this file>`.

Python compiles a script anew at every start, so this one only puts its own folder last on
sys.path (nothing there can stand in for a standard module) and imports quipu_prompt_client.py,
which does the work from its cached bytecode. Fails open.
"""
import sys

try:
    sys.path.append((__file__ if __file__[0] == "/" else __import__("posix").getcwd() + "/" + __file__).rpartition("/")[0])
    import quipu_prompt_client  # noqa: F401 - it answers the prompt and ends the process
except BaseException:  # noqa: BLE001 - a prompt hook fails open
    pass
