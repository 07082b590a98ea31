"""Frontmatter a person wrote in YAML (not the JSON lines quipu writes), read with the safe loader.

Contract: ``yaml_fields`` never executes YAML tags and refuses aliases, anchors and explicit tags;
every refusal, and a value YAML cannot build (``created: 2026-13-45``, a 5,001-digit number), is an
``InvalidMemory`` naming the source and the field. Only ``quipu.store.memory`` calls it, for
frontmatter its fast path cannot read.
"""
from __future__ import annotations

from quipu.errors import InvalidMemory
from quipu.store.memory import _shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def yaml_fields(head: str, source: str) -> Any:
    import yaml  # only here: never on the prompt path

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        # An anchor, an alias and a tag each begin with one of these; without them no event has one.
        for event in yaml.parse(head, Loader=loader) if any(c in head for c in "&*!") else ():
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise InvalidMemory(f"{source}: YAML anchors and aliases are not allowed in frontmatter")
            # Parser events carry a tag only when the text names one explicitly (!!python/...).
            if getattr(event, "tag", None) is not None:
                raise InvalidMemory(f"{source}: YAML tags are not allowed in frontmatter")
        return yaml.load(head, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        problem = str(exc).replace("\n", " ")
        raise InvalidMemory(f"{source}: frontmatter is not valid YAML: {problem}") from None
    except (ValueError, OverflowError, TypeError, RecursionError, MemoryError) as exc:
        # Well-formed YAML whose value cannot be built: a date like 2026-13-45, a number past
        # Python's 4,300-digit limit. Build each field alone to name the one at fault.
        raise InvalidMemory(f"{source}: {_unbuildable_field(head, loader)}: {_shown(str(exc), 120)}") from None


def _unbuildable_field(head: str, loader: Any) -> str:
    import yaml

    try:
        node = yaml.compose(head, Loader=loader)
        for key_node, value_node in node.value if isinstance(node, yaml.MappingNode) else ():
            try:
                loader(yaml.serialize(value_node)).get_single_data()
            except (ValueError, OverflowError, TypeError, RecursionError, MemoryError, yaml.YAMLError):
                return f"field {_shown(getattr(key_node, 'value', '?'), 40)} has a value that cannot be read"
    except (ValueError, OverflowError, TypeError, RecursionError, MemoryError, yaml.YAMLError):
        pass
    return "the frontmatter has a value that cannot be read"
