"""Claude Code UserPromptSubmit hook: quipu recall. Run as `python -I -S prompt_submit.py`.

It finds the quipu package beside it (a source checkout or an installed wheel) without the
site machinery, imports only the standard library, and exits 0 with no output on any failure.
"""
import os
import sys


def _package_parent():
    here = os.path.dirname(os.path.abspath(__file__))
    for _ in range(4):
        if os.path.isfile(os.path.join(here, "quipu", "hook_prompt.py")):
            return here
        here = os.path.dirname(here)
    return None


def _main():
    try:
        parent = _package_parent()
        if parent is None:
            return
        sys.path.insert(0, parent)
        from quipu.hook_prompt import main

        main()
    except BaseException:  # noqa: BLE001 - a prompt hook fails open
        pass


_main()
sys.exit(0)
