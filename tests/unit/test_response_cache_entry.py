"""The response cache's entry (store/cache.py): a complete answer kept as canonical JSON and replayed as
events gives back the same turn, whatever it held: text, reasoning with its provider state, tool calls,
several answers, log probabilities, usage and finish."""

from __future__ import annotations

import orjson

from momor.events import (
    Assembler,
    ChoiceEnd,
    Delta,
    Finish,
    Logprobs,
    PartEnd,
    PartStart,
    TokenLogprob,
    Usage,
    UsageEvent,
)
from momor.store.cache import Entry, answer_of

SIGNED = {"wire": "anthropic", "signature": "sig-123"}


def _assembled(events: list) -> Assembler:
    assembler = Assembler()
    for event in events:
        assembler.add(event)
    return assembler


def _live() -> list:
    return [
        PartStart(0, "thinking"), Delta(0, "Let me "), Delta(0, "think."), PartEnd(0, SIGNED),
        PartStart(1, "content"), Delta(1, "Hel"), Delta(1, "lo"),
        PartStart(2, "toolCall", tool_id="call_1", tool_name="get_weather"), Delta(2, '{"city":'),
        Delta(2, '"Paris"}'), PartEnd(2), PartEnd(1),
        PartStart(3, "content", choice=1), Delta(3, "Hi"), PartEnd(3),
        Logprobs((TokenLogprob("Hel", -0.1, (72, 101, 108), (TokenLogprob("Hi", -2.5),)),)),
        UsageEvent(Usage(input_tokens=12, cache_read_tokens=4)), UsageEvent(Usage(output_tokens=9, reasoning_tokens=3)),
        Finish("tool_use", "tool_calls", "fp_1", (ChoiceEnd(1, "end_turn", "stop"),)),
    ]


def test_an_answer_kept_and_replayed_is_the_same_turn():
    live = _assembled(_live())
    kept = orjson.loads(orjson.dumps(answer_of(live)))  # as stored: JSON text
    replayed = _assembled(Entry("req-1", "m", "p", "o", kept).events())
    assert replayed.messages() == live.messages()
    assert replayed.messages(1) == live.messages(1)
    assert replayed.usage == live.usage
    assert replayed.finish == live.finish
    assert replayed.logprobs == live.logprobs
    thinking = replayed.messages()[0]
    assert thinking.data == SIGNED  # the provider state a next turn replays


def test_an_answer_without_a_finish_is_not_kept():
    assert answer_of(_assembled(_live()[:-1])) is None
