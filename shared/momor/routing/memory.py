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
per-message overhead). A thread keeps every turn (one item each, until its TTL) and memory looks
back over its newest 64 messages, more than "full" injects (store/memory.py), so switching a
thread from compact to full brings back what compact left out.

What is read is the window the mode needs: the newest `Bound.messages` messages, one Query. Only a
caller whose messages hold every turn that window read (it resends its conversation) makes the
read go further back, as far as it resent plus the mode's window (for the older turns it may lack),
never past the 64 messages. A turn is stored as one new item: its cost never grows with the thread.

A resent history is not remembered twice. Clients such as the OpenAI SDK's usual loop send the
whole conversation every turn. When the caller's user and assistant messages already hold the
thread's most recent turns (its last turn and those before it, in order, anywhere before the
caller's own last message), those turns are neither injected again nor stored again: only the
turns after them are new and kept, and only the thread's older turns that the caller did not send
are injected (none when the caller's messages start with history of their own). Messages compare
by role and content, as stored. A request that ends on tool results (or an assistant turn) is the
same exchange going on, not a new turn: the SDK's tool loop resends `[user, assistant(tool_calls),
tool]` with the same chat id, whose user turn (and any text the assistant said beside its calls)
the thread already holds, so its held turns may run to its end, and it injects and keeps nothing
again; the loop's final text answer is kept once, after the turn that asked.

One big turn never costs the thread its history. A turn larger than `TURN_BYTES` (a quarter of
what memory looks back over) is stored shortened: its text cut, marked `[Momor memory: ... shortened ...]`,
its other parts left out. A remembered turn larger than the mode's whole bound is injected
shortened to half the bound, so the turns before it still fit.

Memory is per API key: the store namespaces threads by the caller's id, so a chat id sent with
another key names that key's own thread.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from ..call import Call
from ..caller_body import CallerBody
from ..events import Assembler
from ..logs import logger
from ..messages import ContentMessage, Message
from ..store import bounded, deferred
from ..store import memory as store
from ..tokens import MESSAGE_OVERHEAD, text_tokens

Mode = Literal["auto", "full", "off"]
CHAT_ID_MAX = 128
"""Characters a chat id may have (a DynamoDB key holds more; a chat id is a name, not a payload)."""
CHAT_ID_PATTERN = re.compile(rf"[A-Za-z0-9_.:-]{{1,{CHAT_ID_MAX}}}")
"""A chat id's safe characters: it is echoed in a header (X-Momor-Chat-Id) and keys a DynamoDB item."""
CHAT_ID_CHARACTERS = "letters A-Z and a-z, digits, and _ . : -"
TURN_BYTES = store.HORIZON_BYTES // 4
"""A turn's JSON content beyond this is stored shortened (one turn never pushes out the thread)."""
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
    fresh: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """The caller's user and assistant turns the thread does not hold yet: what this call keeps."""
    resent: int = 0
    """How many of the thread's last turns the caller's messages already held."""


def default_chat_id(caller_id: str) -> str:
    return DEFAULT_PREFIX + caller_id


def recent(turns: list[dict[str, Any]], mode: Mode) -> list[dict[str, Any]]:
    """The most recent turns within the mode's bound, most recent last. A turn larger than the
    whole bound is taken shortened to half of it, so it cannot hide every turn before it."""
    bound = BOUNDS.get(mode)
    if bound is None:
        return []
    kept: list[dict[str, Any]] = []
    used = 0
    for turn in reversed(turns):
        cost = _cost(turn)
        if cost > bound.tokens:
            turn = shortened(turn, (bound.tokens // 2 - MESSAGE_OVERHEAD) * 4)
            cost = _cost(turn)
        if len(kept) >= bound.messages or used + cost > bound.tokens:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    while kept and kept[0].get("role") != "user":
        kept.pop(0)
    return kept


def _cost(turn: dict[str, Any]) -> int:
    return text_tokens(orjson.dumps(turn.get("content")).decode()) + MESSAGE_OVERHEAD


def shortened(turn: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """The turn as is when its content's JSON fits `max_bytes`; else its text cut to fit, with a
    marker saying so (non-text parts, such as inline images, are left out and counted)."""
    content = turn.get("content")
    size = len(orjson.dumps(content))
    if size <= max_bytes:
        return turn
    if isinstance(content, str):
        text, dropped = content, 0
    else:
        parts = content if isinstance(content, list) else []
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        text, dropped = "\n".join(texts), len(parts) - len(texts)
    left = f" and {dropped} non-text part(s)" if dropped else ""
    room = max(max_bytes - 200, 0)
    while True:
        cut = text.encode()[:room].decode(errors="ignore")
        marker = (f"\n[Momor memory: this turn was {size} bytes; shortened to its first "
                  f"{len(cut.encode())} bytes of text{left}]")
        out = cut + marker
        over = len(orjson.dumps(out)) - max_bytes
        if over <= 0 or not cut:
            return {"role": turn.get("role"), "content": out}
        room = max(room - over, 0)  # JSON escapes made it longer than its bytes: cut more


def said(messages: list[Any]) -> list[dict[str, Any]]:
    """The user and assistant messages of a request, as written (their content only). Any other
    role (system, developer, tool, or one the router does not know) is never a turn."""
    out = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") in _CONVERSATION and message.get("content"):
            out.append({"role": message["role"], "content": message["content"]})
    return out


def resent(thread: list[dict[str, Any]], turns: list[dict[str, Any]], last_is_new: bool = True) -> tuple[int, int]:
    """(k, j): `turns[j-k:j]` are the thread's last k turns, the latest such run before the
    caller's last turn when that one is new (`last_is_new`: the request ends on a user message),
    else anywhere up to the end; (0, 0) when the caller's turns do not hold the thread's last."""
    if not thread:
        return 0, 0
    as_stored = [shortened(t, TURN_BYTES) for t in turns]
    for j in range(len(as_stored) - (1 if last_is_new else 0), 0, -1):
        if as_stored[j - 1] != thread[-1]:
            continue
        k = 1
        while k < j and k < len(thread) and as_stored[j - k - 1] == thread[-k - 1]:
            k += 1
        return k, j
    return 0, 0


def ends_on_user(messages: list[Any]) -> bool:
    """Whether the request's last message is a user message: a new turn. A request ending on tool
    results (or an assistant turn) continues the exchange its earlier messages already hold: the
    SDK's tool loop resends `[user, assistant(tool_calls), tool]`, whose user turn the thread has."""
    last = messages[-1] if messages else None
    return not isinstance(last, dict) or last.get("role") not in ("tool", "function", "assistant")


def answered(assembler: Assembler) -> dict[str, Any] | None:
    """The answer's text as the assistant turn to keep; None when it said nothing."""
    text = "".join(m.value for m in assembler.messages() if isinstance(m, ContentMessage))
    return {"role": "assistant", "content": text} if text else None


def with_memory(
    call: Call, own: CallerBody | None, remembered: list[dict[str, Any]],
    to_canonical: Callable[[list[dict[str, Any]]], list[Message]],
) -> tuple[Call, CallerBody | None]:
    """The call and the caller's own body with the remembered turns before their own: in the
    canonical messages (a translated offering) and in the caller's body (`own`, a same-protocol
    offering), after the body's leading instruction messages."""
    if not remembered:
        return call, own
    if own is not None and isinstance(own.body.get("messages"), list):
        messages = own.body["messages"]
        at = next((i for i, m in enumerate(messages) if not (isinstance(m, dict) and m.get("role") in _INSTRUCTIONS)),
                  len(messages))
        own = dataclasses.replace(own, body={**own.body, "messages": [*messages[:at], *remembered, *messages[at:]]})
    return dataclasses.replace(call, messages=[*to_canonical(remembered), *call.messages]), own


async def recall(ask: Ask, caller_id: str, chat_id: str, request_messages: list[Any]) -> Recall:
    """Load (or, for context false, clear) the thread's recent window; what to inject and what is new.
    Within the store's bound (MOMOR_STORE_WAIT_S): past it, a StoreUnavailable (the route's 503)."""
    return await bounded.within("memory", _recall(ask, caller_id, chat_id, request_messages))


async def _recall(ask: Ask, caller_id: str, chat_id: str, request_messages: list[Any]) -> Recall:
    turns = said(request_messages)
    last_is_new = ends_on_user(request_messages)
    if ask.mode == "off":
        await store.clear(caller_id, chat_id)
        return Recall(chat_id, caller_id, ask.mode, store.Thread(), [], turns)
    want = BOUNDS[ask.mode].messages
    thread = store.Thread() if ask.new else await store.load(caller_id, chat_id, want)
    k, j = resent(thread.turns, turns, last_is_new)
    if k and thread.more is not None and (k == len(thread.turns) or j == k):
        # Every turn read matched, so the caller may hold more of the thread than was read; and when
        # it holds only the thread's latest turns, the older ones to inject lie behind them: read
        # back that far (never past the horizon). A caller that resends its whole conversation (the
        # SDK's loop) so costs a read of what it resent; one that sends its new turn, the window.
        thread = await store.load(caller_id, chat_id, j + want, thread)
        k, j = resent(thread.turns, turns, last_is_new)
    if k == 0:
        return Recall(chat_id, caller_id, ask.mode, thread, recent(thread.turns, ask.mode), turns)
    # The caller holds the thread's last k turns: inject only older ones it lacks, and only when its
    # messages start with the held turns (history of its own before them means it keeps its own).
    older = recent(thread.turns[:-k], ask.mode) if j == k else []
    return Recall(chat_id, caller_id, ask.mode, thread, older, turns[j:], k)


async def remember(found: Recall, assembler: Assembler) -> bool | None:
    """Keep the new turn once the answer is complete: True when it is stored, False when the store did
    not take it in time and it is written later (store/deferred.py: retried, else spilled and
    replayed; the caller's answer says so), None when there was nothing to keep. A store failure is
    never the caller's problem: the answer is already good."""
    if found.mode == "off":
        return None
    new = [shortened(t, TURN_BYTES) for t in found.fresh]
    answer = answered(assembler)
    if answer is not None:
        new.append(shortened(answer, TURN_BYTES))
    if not new:
        return None
    try:
        put = store.turn_put(found.caller_id, found.chat_id, new)
    except Exception:
        logger.exception("memory turn not kept", extra={"chat_id_length": len(found.chat_id)})
        return None
    # Within the store's bound; a turn the store does not take in time is written later (retried,
    # else spilled and replayed: store/deferred.py), never silently dropped.
    return await deferred.write(deferred.Write("memory", found.caller_id, [put], store.runs()))
