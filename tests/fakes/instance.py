"""A small instance of a JSON schema: what the fakes answer for structured output and forced tool
calls, so a client that validates the answer against the schema it sent (the openai SDK's `parse`,
pydantic models in instructor, pydantic-ai, LangChain's `with_structured_output`) accepts it.

Strings carry the user's text (fitted to minLength/maxLength, or a value of the `format` asked);
numbers the least the bounds allow; arrays minItems items (at least one); objects every property
(so `required` and `additionalProperties: false` both hold). `$ref` (to `#/$defs/...` or any path
of the root), `anyOf`/`oneOf` (the first that is not null), `allOf` (merged), `enum` and `const`
are followed. A `pattern` is not generated: a string under one is the user's text, as before.
"""

from __future__ import annotations

import math
from typing import Any

_FORMATS = {
    "date-time": "2025-01-01T00:00:00Z", "date": "2025-01-01", "time": "00:00:00Z", "email": "user@example.com",
    "uri": "https://example.com/", "url": "https://example.com/", "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "hostname": "example.com", "duration": "P1D",
}
_DEPTH = 8
"""How deep a recursive schema is followed before an empty value stands in."""


def instance(schema: Any, text: str, root: Any = None, depth: int = 0) -> Any:
    root = schema if root is None else root
    if not isinstance(schema, dict):
        return text
    if depth > _DEPTH:
        return None
    if "$ref" in schema:
        return instance(_resolve(schema["$ref"], root), text, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("allOf"):
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = _resolve(part["$ref"], root) if isinstance(part, dict) and "$ref" in part else part
            merged = _merge(merged, part if isinstance(part, dict) else {})
        return instance(merged, text, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if options:
            chosen = next((o for o in options if not (isinstance(o, dict) and o.get("type") == "null")), options[0])
            return instance(chosen, text, root, depth + 1)
    return _typed(schema, text, root, depth)


def _typed(schema: dict[str, Any], text: str, root: Any, depth: int) -> Any:
    """An instance of a schema with no combinator left: by its `type` (or what its keywords imply)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "string":
        return _string(schema, text)
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "array":
        return _array(schema, text, root, depth)
    if kind in ("boolean", "null"):
        return False if kind == "boolean" else None
    return {name: instance(sub, text, root, depth + 1) for name, sub in (schema.get("properties") or {}).items()}


def _resolve(ref: str, root: Any) -> Any:
    target = root
    for part in ref.lstrip("#").strip("/").split("/"):
        if part:
            target = target[part.replace("~1", "/").replace("~0", "~")]
    return target


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = {**a, **b}
    if "properties" in a or "properties" in b:
        out["properties"] = {**(a.get("properties") or {}), **(b.get("properties") or {})}
    return out


def _string(schema: dict[str, Any], text: str) -> str:
    fmt = schema.get("format")
    value = _FORMATS.get(fmt, text) if isinstance(fmt, str) else text
    least, most = schema.get("minLength"), schema.get("maxLength")
    if isinstance(most, int) and len(value) > most:
        value = value[:most]
    if isinstance(least, int) and len(value) < least:
        value = value + "x" * (least - len(value))
    return value


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    low = schema.get("minimum")
    above = schema.get("exclusiveMinimum")
    high = schema.get("maximum")
    below = schema.get("exclusiveMaximum")
    value: float = 0
    if isinstance(low, (int, float)) and not isinstance(low, bool) and value < low:
        value = low
    if isinstance(above, (int, float)) and not isinstance(above, bool) and value <= above:
        value = math.floor(above) + 1 if integer else above + 1e-3
    if isinstance(high, (int, float)) and not isinstance(high, bool) and value > high:
        value = high
    if isinstance(below, (int, float)) and not isinstance(below, bool) and value >= below:
        value = math.ceil(below) - 1 if integer else below - 1e-3
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and step > 0:
        value = math.ceil(value / step) * step
    return math.ceil(value) if integer else value


def _array(schema: dict[str, Any], text: str, root: Any, depth: int) -> list[Any]:
    prefix = schema.get("prefixItems") or []
    items = schema.get("items", {})
    count = max(schema.get("minItems", 1) if isinstance(schema.get("minItems"), int) else 1, len(prefix))
    most = schema.get("maxItems")
    if isinstance(most, int):
        count = min(count, most)
    out = [instance(prefix[i] if i < len(prefix) else items, text, root, depth + 1) for i in range(count)]
    if schema.get("uniqueItems") and len(out) > 1 and all(isinstance(v, str) for v in out):
        out = [f"{v}{i}" if i else v for i, v in enumerate(out)]
    return out
