"""Whole numbers written as floats, made ints after validation: JSON Schema's "integer" accepts
3.0, but widths, seeds, class counts and steps name files (`w3.0_g0_f0` is not a rule's) and count
loops. And YAML's bare `null:` key, read as None: the config's "null" section is put back."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def _resolve(node: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow a local `$ref` ("#/a/b/c") to the node it names."""
    while "$ref" in node:
        target: Any = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _wants_integer(node: Mapping[str, Any]) -> bool:
    kinds = node.get("type")
    return kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds) or any(
        _wants_integer(alt) for alt in node.get("oneOf", []) + node.get("anyOf", []))


def integral_floats_to_int(value: Any, node: Mapping[str, Any],
                           schema: Mapping[str, Any] | None = None) -> Any:
    """`value` with each integral float at an integer position of `node` (a schema, whose
    root is `schema`) made an int; dicts and lists are changed in place."""
    schema = node if schema is None else schema
    node = _resolve(node, schema)
    if isinstance(value, float) and value.is_integer() and _wants_integer(node):
        return int(value)
    if isinstance(value, dict):
        properties = node.get("properties", {})
        for key in value:
            if key in properties:
                value[key] = integral_floats_to_int(value[key], properties[key], schema)
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, item in enumerate(value):
            value[i] = integral_floats_to_int(item, node["items"], schema)
    return value


def whole_numbers_as_int(config: dict[str, Any], schema_path: str | os.PathLike[str]) -> None:
    """`integral_floats_to_int` over a validated config with the schema file it passed."""
    import yaml

    with open(schema_path) as fh:
        integral_floats_to_int(config, yaml.safe_load(fh))


def named_null_section(config: dict[Any, Any]) -> None:
    """Before validation, move a section under the key None to "null", over its values."""
    if None in config:
        bare = config.pop(None)
        config["null"] = {**config.get("null", {}), **(bare or {})}
