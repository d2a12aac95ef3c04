"""The router alias (POST /router/v1/chat/completions, seed 003) for the fuzz suite: the OpenAI
dialect plus memory and routing fields; a clean answer is the OpenAI dialect's."""

from __future__ import annotations

from typing import Any

from .conftest import mutated
from .dialect import Dialect
from .openai import OPENAI_PATHS, OPENAI_WORDS, check_openai, openai_base

ROUTER_PATH = "/router/v1/chat/completions"
ROUTER_PATHS: list[tuple[Any, ...]] = [
    *OPENAI_PATHS,
    *[(f,) for f in ("chat_id", "conversation_id", "thread_id", "memory_id", "new_chat", "context", "prompt")],
]
ROUTER_WORDS = [*OPENAI_WORDS, "zen", "nvidia-auto", "puter", "router", "gpt-5-mini:high", "full", "auto",
                "chat_default_", "x" * 129]

DIALECT = Dialect(name="router", path=ROUTER_PATH, base=openai_base, stream_field="stream",
                  near_valid=lambda: mutated(openai_base, ROUTER_PATHS, ROUTER_WORDS), check=check_openai)
