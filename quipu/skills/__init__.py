"""Skills drafted from procedures repeated in three or more past sessions, inert until a person promotes them.

Modules, each with one job: ``detect`` (procedures counted in the history index, no model),
``gate`` (the structural checks a draft must pass), ``draft`` (one model call per candidate, then
the gate, then one commit in the store), ``queue`` (the store's skill folders: drafts, refusals,
promotion events) and ``promote`` (a person copies a draft where Claude Code loads skills).
Nothing here is imported by the prompt hook.
"""
