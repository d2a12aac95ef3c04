"""The guardrail steps on the canonical call and events, without a server: masking with one placeholder
per value across messages, restoring it in a stream however the chunks split it, and output checks
within the documented window (a block raises before any held text is sent)."""

from __future__ import annotations

import asyncio

import pytest

from momor.call import Call
from momor.events import Assembler, Delta, Finish, PartEnd, PartStart
from momor.guardrails.answer import guard_stream, guard_whole
from momor.guardrails.policy import parse
from momor.guardrails.refusal import GuardrailRefused, GuardrailUnavailable, OutputBlocked, OutputUnavailable
from momor.guardrails.screen import screen
from momor.guardrails.spans import Span
from momor.messages import ContentMessage, ToolCallBody, ToolCallMessage, UserMessage

MASK = {"input": [{"check": "pii", "action": "mask", "restore": True}]}


def call(*texts: str, system: str = "") -> Call:
    return Call(system=system, messages=[UserMessage(value=t) for t in texts])


def test_one_value_is_one_placeholder_in_every_message():
    c = call("mail a@example.com, card 4111 1111 1111 1111", "again a@example.com, and b@example.com",
             system="operator is a@example.com")
    c.messages.append(ToolCallMessage(call=ToolCallBody(id="1", name="send", arguments='{"to": "b@example.com"}')))
    screening = screen(parse(MASK, origin="key"), c)
    assert c.system == "operator is [EMAIL_1]"
    assert c.messages[0].value == "mail [EMAIL_1], card [CARD_1]"
    assert c.messages[1].value == "again [EMAIL_1], and [EMAIL_2]"
    assert c.messages[2].call.arguments == '{"to": "[EMAIL_2]"}'
    assert [(v.where, v.spans, v.entities) for v in screening.verdicts] == [
        ("system", 1, {"email": 1}), ("message 0", 2, {"email": 1, "card": 1}),
        ("message 1", 2, {"email": 2}), ("message 2", 1, {"email": 1})]
    assert screening.placeholders.restore("[EMAIL_2] and [CARD_1] and [EMAIL_9]") == (
        "b@example.com and 4111 1111 1111 1111 and [EMAIL_9]")


def test_a_block_refuses_naming_the_check_never_the_text():
    policy = parse({"input": [{"check": "pii", "action": "mask"},
                              {"check": "denylist", "action": "block", "words": ["falcon"], "name": "codenames"}]},
                   origin="organization")
    with pytest.raises(GuardrailRefused) as refused:
        screen(policy, call("a@example.com", "about Falcon"))
    exc = refused.value
    assert (exc.status, exc.code) == (400, "guardrail_refused")
    assert "codenames" in exc.detail and "organization" in exc.detail and "alcon" not in exc.detail


def test_log_notes_and_changes_nothing():
    c = call("ip 10.0.0.1")
    screening = screen(parse({"input": [{"check": "pii", "action": "log"}]}, origin="key"), c)
    assert c.messages[0].value == "ip 10.0.0.1" and not screening.masked
    assert screening.verdicts[0].to_dict()["entities"] == {"ip": 1}


async def events_of(items):
    for item in items:
        yield item


def run_stream(screening, pieces, window=64, kind="content"):
    items = [PartStart(0, kind), *[Delta(0, p) for p in pieces], PartEnd(0), Finish("stop", "stop")]

    async def collect():
        return [e async for e in guard_stream(screening, events_of(items), window)]

    return asyncio.run(collect())


def text_of(events):
    return "".join(e.text for e in events if isinstance(e, Delta))


@pytest.mark.parametrize("size", [1, 2, 3, 5, 100])
def test_a_placeholder_split_across_chunks_is_restored_whole(size):
    c = call("me: a@example.com, card 4111 1111 1111 1111")
    screening = screen(parse(MASK, origin="key"), c)
    answer = "Sure [EMAIL_1], your card [CARD_1] is noted; [EMAIL_7] and [brackets] stay."
    pieces = [answer[i:i + size] for i in range(0, len(answer), size)]
    out = run_stream(screening, pieces)
    assert text_of(out) == ("Sure a@example.com, your card 4111 1111 1111 1111 is noted; [EMAIL_7] and "
                            "[brackets] stay.")
    assert all("[EMAIL_1" not in e.text and "CARD_1]" not in e.text for e in out if isinstance(e, Delta))


def test_tool_call_arguments_are_restored_as_json():
    c = call('say "q"@example.com')
    c.messages[0].value = 'x "quoted\\"@example.com'
    screening = screen(parse({"input": [{"check": "regex", "action": "mask", "restore": True,
                                         "patterns": ['"quoted\\\\"']}]}, origin="key"), c)
    out = run_stream(screening, ['{"to": "[MATCH_1]"}'], kind="toolCall")
    assert text_of(out) == '{"to": "\\"quoted\\\\\\""}'


def test_output_mask_and_block_within_the_window():
    policy = parse({"output": [{"check": "pii", "action": "mask", "entities": ["email"]},
                               {"check": "denylist", "action": "block", "words": ["forbidden"]}]}, origin="key")
    screening = screen(policy, call("hi"))
    answer = "reach me at someone@example.org please. " * 3
    out = run_stream(screening, [answer[i:i + 7] for i in range(0, len(answer), 7)], window=64)
    assert text_of(out) == "reach me at [EMAIL] please. " * 3
    assert screening.verdicts[-1].to_dict() | {"entities": None} == {
        "guardrail": "pii", "origin": "key", "direction": "output", "check": "pii", "action": "mask",
        "where": "answer", "spans": 3, "entities": None}
    # a block: nothing held is sent, and no more than the window was ever held back
    screening = screen(policy, call("hi"))
    sent = []
    with pytest.raises(OutputBlocked):
        for event in run_stream_lazily(screening, ["a" * 40, " the forbidden word ", "b" * 200]):
            sent.append(event)
    assert "forbidden" not in text_of(sent)


def run_stream_lazily(screening, pieces):
    items = [PartStart(0, "content"), *[Delta(0, p) for p in pieces], PartEnd(0), Finish("stop", "stop")]
    loop = asyncio.new_event_loop()
    gen = guard_stream(screening, events_of(items), 64)
    try:
        while True:
            try:
                yield loop.run_until_complete(gen.__anext__())
            except StopAsyncIteration:
                return
    finally:
        loop.close()


def test_a_stream_holds_back_at_most_the_window():
    policy = parse({"output": [{"check": "pii", "action": "log"}]}, origin="key")
    screening = screen(policy, call("hi"))
    fed = 0

    async def source():
        nonlocal fed
        yield PartStart(0, "content")
        for _ in range(30):
            fed += 10
            yield Delta(0, "x" * 10)
        yield PartEnd(0)

    async def collect():
        received, most_held = 0, 0
        async for event in guard_stream(screening, source(), 64):
            if isinstance(event, Delta):
                received += len(event.text)
            most_held = max(most_held, fed - received)
        return received, most_held

    received, most_held = asyncio.run(collect())
    assert received == 300 and most_held <= 64


def test_buffered_answer_checked_and_restored_whole():
    c = call("card 4111 1111 1111 1111")
    screening = screen(parse({**MASK, "output": [{"check": "denylist", "action": "block", "words": ["nope"]}]},
                             origin="key"), c)
    assembler = Assembler()
    for event in (PartStart(0, "content"), Delta(0, "card [CA"), Delta(0, "RD_1] ok"), PartEnd(0)):
        assembler.add(event)
    asyncio.run(guard_whole(screening, assembler))
    assert assembler.messages()[0] == ContentMessage(value="card 4111 1111 1111 1111 ok")
    assembler = Assembler()
    for event in (PartStart(0, "content"), Delta(0, "well, nope"), PartEnd(0)):
        assembler.add(event)
    with pytest.raises(GuardrailRefused):
        asyncio.run(guard_whole(screening, assembler))


def looked_up(found, asked):
    """A service's lookup as api/guardrail_services.py hands it over: `found(check, text)` its answer."""

    async def lookup(check, text, screening):
        asked.append(text)
        return found(check, text)

    return lookup


def test_a_services_output_check_is_asked_window_by_window_and_masks_what_it_finds(monkeypatch):
    monkeypatch.setenv("MOMOR_GUARDRAIL_MODERATION_PROVIDER", "openai")
    from momor.config import reset_config

    reset_config()
    policy = parse({"output": [{"check": "comprehend", "action": "mask", "entities": ["EMAIL"]},
                               {"check": "moderation", "action": "log"}]}, origin="key")
    screening = screen(policy, call("hi"))
    asked: list[str] = []

    def found(check, text):
        if check.check == "moderation":  # a flag on the whole text: it never holds a window back
            return [Span(0, len(text), "violence")] if "fight" in text else []
        at = text.find("someone@example.org")
        return [Span(at, at + 19, "EMAIL")] if at >= 0 else []

    screening.lookup = looked_up(found, asked)
    answer = "reach someone@example.org, then fight. " * 6
    out = run_stream(screening, [answer[i:i + 5] for i in range(0, len(answer), 5)], window=64)
    assert text_of(out) == answer.replace("someone@example.org", "[EMAIL]")
    assert len(asked) > 4 and all(len(t) < 64 + 5 for t in asked)
    kinds = {v.check: v.entities for v in screening.verdicts}
    assert kinds["comprehend"] == {"EMAIL": 6} and kinds["moderation"]["violence"] >= 1


def test_a_services_output_check_that_cannot_run_ends_the_stream_or_refuses_the_answer():
    policy = parse({"output": [{"check": "comprehend", "action": "mask"}]}, origin="key")
    screening = screen(policy, call("hi"))

    async def down(check, text, screening):
        raise GuardrailUnavailable(check, "Comprehend answered 500 InternalServerException")

    screening.lookup = down
    with pytest.raises(OutputUnavailable) as ended:
        run_stream(screening, ["x" * 100])
    assert ended.value.frame_status == 503 and ended.value.code == "guardrail_unavailable"
    assembler = Assembler()
    for event in (PartStart(0, "content"), Delta(0, "some answer"), PartEnd(0)):
        assembler.add(event)
    with pytest.raises(GuardrailUnavailable):
        asyncio.run(guard_whole(screening, assembler))
