# Claude Code UserPromptSubmit hook in plugin mode: `sh prompt_submit.sh`.
#
# A plugin's hooks.json cannot name this machine's interpreter, and a `python3` on PATH is often
# a pyenv or asdf shim that costs tens of milliseconds on every prompt. quipu's session hooks
# record the real interpreter they ran under in $QUIPU_HOME/python; this runs prompt_submit.py
# with it (else with python3), without forking anything. Fails open: with no Python, exit 0.
home=${QUIPU_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/quipu}
py=
if [ -r "$home/python" ]; then
    read -r py < "$home/python" || py=
fi
if [ -z "$py" ] || [ ! -x "$py" ]; then
    command -v python3 >/dev/null 2>&1 || exit 0
    py=python3
fi
exec "$py" -I -S "${0%/*}/prompt_submit.py"
