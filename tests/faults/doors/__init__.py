"""One adapter per door, with one interface, so a fault test is written once for every dialect.

A `Door` makes a call (buffered or streamed, with a lead provider and the selectors in order) and
returns an `Outcome`: the call as that dialect's caller saw it. The outcome reads, in the dialect's
own shape, what the shared tests assert: who served and under what name, the text, the refusal sent
before any stream opened, the error that ended a stream after output, the finish and the usage.
What differs between dialects (the default lead, the error types, the SDK's exceptions, where usage
is reported) is data on the door, so tests/faults/test_faults_routes.py never branches on a name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .anthropic_messages import AnthropicDoor
from .base import Door, Outcome
from .native import NativeDoor
from .openai_chat import OpenAIDoor
from .openai_responses import ResponsesDoor

DOORS: dict[str, Callable[[Any], Door]] = {"native": NativeDoor, "openai": OpenAIDoor, "anthropic": AnthropicDoor,
                                           "responses": ResponsesDoor}
"""Dialect name (as the record names it) -> the door's adapter, built on a running Momor."""

__all__ = ["DOORS", "Door", "Outcome"]
