"""POST /models/decision (seed 000): the native body, less what a decision has no use for, plus
`options`, the 2 to 256 distinct strings the answer must be one of.

The reading is the native route's (parse.py) once `options` and `streaming` are checked: the same
selectors, prioritization, keys, parameters and limits. A decision is never streamed; tools,
responseSchema and fileProcessing belong to the chat routes and are refused by name.
"""

from __future__ import annotations

from typing import Any

from ...errors import RequestError
from ...routing.request import Routed
from . import parse as native_parse

MIN_OPTIONS, MAX_OPTIONS = 2, 256
FIELDS = ("systemPrompt", "messages", "model", "models", "prioritization", "keys", "parameters", "options",
          "streaming")


def options_of(value: Any) -> list[str]:
    if value is None:
        raise RequestError("options: is required (2 to 256 distinct strings).", param="options")
    if not isinstance(value, list) or not all(isinstance(o, str) for o in value):
        raise RequestError("options: must be an array of strings.", param="options")
    if not MIN_OPTIONS <= len(value) <= MAX_OPTIONS:
        raise RequestError(f"options: must hold {MIN_OPTIONS} to {MAX_OPTIONS} strings; it holds {len(value)}.",
                           param="options")
    for i, option in enumerate(value):
        if not option.strip():
            raise RequestError(f"options[{i}]: must not be empty.", param=f"options[{i}]")
        if option in value[:i]:
            raise RequestError(f"options[{i}]: {option!r} is given more than once; options must be distinct.",
                               param=f"options[{i}]")
    return list(value)


def parse(raw: dict[str, Any]) -> Routed:
    for name in raw:
        if name not in FIELDS:
            raise RequestError(f"{name}: is not a field of a decision request.", param=name)
    if raw.get("streaming") is True:
        raise RequestError("streaming: a decision is never streamed; send false or leave it out.",
                           param="streaming")
    options = options_of(raw.get("options"))
    routed = native_parse.parse({k: v for k, v in raw.items() if k != "options"})
    routed.kind = "decision"
    routed.reply = options
    return routed
