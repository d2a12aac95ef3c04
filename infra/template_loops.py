"""template.yaml's Fn::ForEach loops written out, for the static checks that read the template itself.

The static checks (tests/lambda, infra/bench/cost.py) look a resource up by logical id
(`ModelsFunction`) and read its properties as written: a loop gives them each resource it writes,
with only what the loop itself decides resolved. That is what CloudFormation's Fn::ForEach
substitutes (cfn-lint's transforms/_language_extensions.py mirrors it): the identifier in keys, in
Fn::Sub text and as `Ref: Name`; a Ref or Fn::GetAtt whose target is computed
(`Ref: !Sub "${Name}FunctionLogs"`); an Fn::FindInMap whose keys are then literal (over the
template's Mappings, DefaultValue included). Every other Ref, Fn::Sub or Fn::If is kept as written,
so a check reads `{"Ref": "SnapStart"}` just as it would in a function written out by hand. An
Fn::If's condition name is never substituted (CloudFormation does not), nor is plain text.

The translation (sam_translate.py, SAM CLI's own port of the transform) is what the snapshot pins;
this is only the reading the static checks need, without SAM CLI's interpreter.
"""

from __future__ import annotations

import copy
import re
from typing import Any

FOREACH = "Fn::ForEach::"


def expand(template: dict[str, Any]) -> dict[str, Any]:
    """A copy of `template` with every Fn::ForEach in Conditions, Resources and Outputs written out."""
    found = copy.deepcopy(template)
    mappings = found.get("Mappings", {})
    for section in ("Conditions", "Resources", "Outputs"):
        if section in found:
            found[section] = _expand_section(found[section], {}, mappings)
    return found


def _expand_section(section: dict[str, Any], bound: dict[str, str], mappings: dict[str, Any]) -> dict[str, Any]:
    written: dict[str, Any] = {}
    for key, value in section.items():
        if key.startswith(FOREACH):
            identifier, items, body = value
            for item in _substitute(items, bound, mappings):
                for k, v in _expand_section(body, {**bound, identifier: item}, mappings).items():
                    assert k not in written, f"{key} writes {k} twice"
                    written[k] = v
            continue
        name = _text(key, bound)
        assert name not in written, f"{name} is written twice"
        written[name] = _substitute(value, bound, mappings)
    return written


def _text(text: str, bound: dict[str, str]) -> str:
    for identifier, item in bound.items():
        text = text.replace(f"${{{identifier}}}", item)
        text = text.replace(f"&{{{identifier}}}", re.sub("[^0-9A-Za-z]", "", item))
    return text


def _substitute(value: Any, bound: dict[str, str], mappings: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [_substitute(v, bound, mappings) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (name, arg), = value.items()
        if name == "Ref":
            if isinstance(arg, str):
                return bound.get(arg, value)
            target = _literal(_substitute(arg, bound, mappings))
            return {"Ref": target} if target is not None else {"Ref": _substitute(arg, bound, mappings)}
        if name == "Fn::GetAtt" and isinstance(arg, list):
            parts = [_substitute(a, bound, mappings) for a in arg]
            literal = [_literal(p) for p in parts]
            return {"Fn::GetAtt": [lit if lit is not None else p for lit, p in zip(literal, parts, strict=True)]}
        if name == "Fn::Sub":
            if isinstance(arg, str):
                return {"Fn::Sub": _text(arg, bound)}
            return {"Fn::Sub": [_text(arg[0], bound), *_substitute(arg[1:], bound, mappings)]}
        if name == "Fn::FindInMap":
            args = _substitute(arg, bound, mappings)
            resolved = _find_in_map(args, mappings)
            return copy.deepcopy(resolved) if resolved is not None else {"Fn::FindInMap": args}
        if name == "Fn::If":
            condition, *branches = arg
            return {"Fn::If": [condition, *_substitute(branches, bound, mappings)]}
    return {_text(k, bound): _substitute(v, bound, mappings) for k, v in value.items()}


def _literal(value: Any) -> str | None:
    """The text a resolved target stands for: a string, or an Fn::Sub with nothing left to fill."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and list(value) == ["Fn::Sub"] and isinstance(value["Fn::Sub"], str):
        return None if "${" in value["Fn::Sub"] else value["Fn::Sub"]
    return None


def _find_in_map(args: list[Any], mappings: dict[str, Any]) -> Any:
    name, top, second, *rest = args
    if not all(isinstance(a, str) for a in (name, top, second)):
        return None
    default = rest[0].get("DefaultValue") if rest and isinstance(rest[0], dict) else None
    found = mappings.get(name, {}).get(top, {}).get(second)
    if found is None and default is None:
        raise KeyError(f"Fn::FindInMap {args}: not in Mappings and no DefaultValue")
    return found if found is not None else default
