"""Claude Code UserPromptSubmit hook: quipu recall (quipu/prompt/hook.py). Run as `python -I -S <this file>`.

Only a few statements: Python compiles a script anew at every start (modules come from their
cached bytecode). No site-packages: the quipu package is found beside this file, in a source
checkout (hooks/ next to quipu/) or an installed wheel (quipu/_assets/hooks/). Its folder goes
last on sys.path, so nothing there (nor the working directory) can stand in for a standard
module. Fails open. The collector of reference cycles is off: the process lives for
milliseconds, and imports would trigger it several times for nothing.
"""
import gc
import sys

gc.disable()
try:
    _top = (__file__ if __file__.startswith("/") else __import__("posix").getcwd() + "/" + __file__).rsplit("/", 2)[0]
    sys.path.append(_top.rsplit("/", 2)[0] if _top.endswith("/quipu/_assets") else _top)
    import quipu.prompt

    quipu.prompt.load_prompt_path()  # the hook's modules from their cached bytecode, without importlib
    from quipu.prompt.hook import run_as_hook
except BaseException:  # noqa: BLE001 - a prompt hook fails open
    sys.exit(0)
run_as_hook()
