"""n answers from a wire that gives one (routing/choices.py): n calls joined into one answer."""

from __future__ import annotations

import pytest

from momor.call import Call
from momor.errors import ProviderError
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
from momor.messages import UserMessage
from momor.routing.choices import several_answers


def _answer(text: str, reason: str = "end_turn") -> list:
    return [UsageEvent(Usage(input_tokens=5)), PartStart(0, "thinking"), Delta(0, "hm"), PartEnd(0),
            PartStart(1, "content"), Delta(1, text), Logprobs((TokenLogprob(text, -0.1),)), PartEnd(1),
            UsageEvent(Usage(output_tokens=2)), Finish(reason, "stop")]


def _exchange(answers: list, seen: list):
    async def exchange(wire, call, target, **how):
        seen.append((call.n, how))
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        for event in answer:
            yield event
    return exchange


async def _joined(answers: list, stream: bool) -> tuple[Assembler, list]:
    seen: list = []
    call = Call(system="", messages=[UserMessage(value="Hi")], n=len(answers))
    assembler = Assembler()
    async for event in several_answers(_exchange(answers, seen), None, call, None, stream=stream):  # type: ignore[arg-type]
        assembler.add(event)
    return assembler, seen


@pytest.mark.parametrize("stream", [False, True])
async def test_n_calls_become_one_answer_of_n_choices(stream):
    assembler, seen = await _joined([_answer("one"), _answer("two", "max_tokens")], stream)
    assert [n for n, _ in seen] == [1, 1] and all(how["stream"] is stream for _, how in seen)
    assert [m.value for m in assembler.messages(0)] == ["hm", "one"]
    assert [m.value for m in assembler.messages(1)] == ["hm", "two"]
    assert (assembler.usage.input_tokens, assembler.usage.output_tokens) == (10, 4)  # both calls were billed
    assert assembler.finish == Finish("end_turn", "stop", others=(ChoiceEnd(1, "max_tokens", "stop"),))
    assert [t.token for t in assembler.logprobs[1]] == ["two"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_failed_call_fails_the_answer(stream):
    with pytest.raises(ProviderError):
        await _joined([_answer("one"), ProviderError("down", kind="http", upstream_status=500)], stream)


async def test_an_answer_without_a_finish_ends_the_joined_answer_without_one():
    cut = [e for e in _answer("one") if not isinstance(e, Finish)]
    assembler, _ = await _joined([cut, _answer("two")], True)
    assert assembler.finish is None and not any(p.choice == 1 for p in assembler.parts.values())


async def test_a_whole_answers_calls_are_at_most_four_at_once():
    """n calls go out FAN_OUT at a time (issue 33: n=300 made 300 concurrent provider calls)."""
    import asyncio

    from momor.routing.choices import FAN_OUT

    under_way, most = 0, 0

    async def exchange(wire, call, target, **how):
        nonlocal under_way, most
        under_way += 1
        most = max(most, under_way)
        await asyncio.sleep(0.01)
        under_way -= 1
        for event in _answer("hi"):
            yield event

    call = Call(system="", messages=[UserMessage(value="Hi")], n=10)
    events = [e async for e in several_answers(exchange, None, call, None, stream=False)]  # type: ignore[arg-type]
    assert most == FAN_OUT == 4 and isinstance(events[-1], Finish) and len(events[-1].others) == 9
