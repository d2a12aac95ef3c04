"""Conversation memory, a routing step of the router alias (seed 003).

A call names a thread (`chat_id`, else the key's default thread `chat_default_<caller id>`) and
a mode (`context`). Before planning, the thread's recent turns are put into the call as the
earlier user and assistant messages of the conversation: after the caller's instruction messages
(system, developer) and before the new turn. Once the answer is complete, the new turn is kept:
the user and assistant messages the caller sent, verbatim, then the answer's text. System,
developer and tool messages are instructions, never stored or injected. A failed call keeps nothing.

Modes and their bounds (the most recent messages that fit both, most recent last; a slice never
opens with an assistant message, so the model sees each kept answer with its question):

    "auto" (also true, the default)   compact: at most 8 messages (4 exchanges) and 2,000 tokens
    "full"                            at most 40 messages (20 exchanges) and 16,000 tokens
    false                             the thread is cleared; nothing is injected or kept

Tokens are estimated offline (tokens.py: a token per 4 UTF-8 bytes of the message's JSON plus a
per-message overhead). The store keeps more than "full" injects (store/memory.py), so switching
a thread from compact to full brings back what compact left out.

Memory is per API key: the store namespaces threads by the caller's id, so a chat id sent with
another key names that key's own thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from ..call import Call
from ..events import Assembler
from ..logs import logger
from ..messages import ContentMessage, Message
from ..store import memory as store
from ..tokens import MESSAGE_OVERHEAD, text_tokens

Mode = Literal["auto", "full", "off"]
CHAT_ID_MAX = 128
"""Characters a chat id may have (a DynamoDB key holds more; a chat id is a name, not a payload)."""
DEFAULT_PREFIX = "chat_default_"
_CONVERSATION = ("user", "assistant")
_INSTRUCTIONS = ("system", "developer")


@dataclass(frozen=True, slots=True)
class Bound:
    messages: int
    tokens: int


BOUNDS: dict[str, Bound] = {"auto": Bound(messages=8, tokens=2000), "full": Bound(messages=40, tokens=16000)}


@dataclass(frozen=True, slots=True)
class Ask:
    """What the caller asked of memory: which thread, which mode."""

    chat_id: str | None
    """As sent (any alias); None: the key's default thread, unless `new`."""
    mode: Mode
    new: bool = False
    """new_chat: a fresh random thread (its id is `Recall.chat_id`)."""


@dataclass(slots=True)
class Recall:
    """A thread as this call found it."""

    chat_id: str
    caller_id: str
    mode: Mode
    thread: store.Thread
    injected: list[dict[str, Any]]
    """The remembered messages this call carries."""


def default_chat_id(caller_id: str) -> str:
    return DEFAULT_PREFIX + caller_id


def recent(turns: list[dict[str, Any]], mode: Mode) -> list[dict[str, Any]]:
    """The most recent turns within the mode's bound, most recent last."""
    bound = BOUNDS.get(mode)
    if bound is None:
        return []
    kept: list[dict[str, Any]] = []
    used = 0
    for turn in reversed(turns):
        cost = text_tokens(orjson.dumps(turn.get("content")).decode()) + MESSAGE_OVERHEAD
        if len(kept) >= bound.messages or used + cost > bound.tokens:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    while kept and kept[0].get("role") != "user":
        kept.pop(0)
    return kept


def said(messages: list[Any]) -> list[dict[str, Any]]:
    """The user and assistant messages of a request, as written (their content only)."""
    out = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") in _CONVERSATION and message.get("content"):
            out.append({"role": message["role"], "content": message["content"]})
    return out


def answered(assembler: Assembler) -> dict[str, Any] | None:
    """The answer's text as the assistant turn to keep; None when it said nothing."""
    text = "".join(m.value for m in assembler.messages() if isinstance(m, ContentMessage))
    return {"role": "assistant", "content": text} if text else None


def with_memory(
    call: Call, remembered: list[dict[str, Any]], to_canonical: Callable[[list[dict[str, Any]]], list[Message]]
) -> Call:
    """The call with the remembered turns before its own: in the canonical messages (a translated
    offering) and in the caller's own body (`raw`, a same-protocol offering), after the body's
    leading instruction messages."""
    if not remembered:
        return call
    raw = call.raw
    if raw is not None and isinstance(raw.get("messages"), list):
        messages = raw["messages"]
        at = next((i for i, m in enumerate(messages) if not (isinstance(m, dict) and m.get("role") in _INSTRUCTIONS)),
                  len(messages))
        raw = {**raw, "messages": [*messages[:at], *remembered, *messages[at:]]}
    return dataclasses.replace(call, messages=[*to_canonical(remembered), *call.messages], raw=raw)


async def recall(ask: Ask, caller_id: str, chat_id: str) -> Recall:
    """Load (or, for context false, clear) the thread."""
    if ask.mode == "off":
        await store.clear(caller_id, chat_id)
        return Recall(chat_id, caller_id, ask.mode, store.Thread(), [])
    thread = store.Thread() if ask.new else await store.load(caller_id, chat_id)
    return Recall(chat_id, caller_id, ask.mode, thread, recent(thread.turns, ask.mode))


async def remember(found: Recall, request_messages: list[Any], assembler: Assembler) -> None:
    """Keep the new turn once the answer is complete. A store failure is logged, never the
    caller's problem: the answer is already good."""
    if found.mode == "off":
        return
    new = said(request_messages)
    answer = answered(assembler)
    if answer is not None:
        new.append(answer)
    if not new:
        return
    try:
        await store.append(found.caller_id, found.chat_id, new, found.thread)
    except Exception:
        logger.exception("memory turn not kept", extra={"chat_id_length": len(found.chat_id)})
