"""The transport against raw sockets on 127.0.0.1: a connection closed before any response byte is
`dropped` (retried, not a cut answer), and a provider that never sends its headers is given up on
after the response timeout, not the first-token timeout (issue 10, items 17 and 28)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2
import pytest

from momor.call import Call
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.messages import UserMessage
from momor.providers import wire_for
from momor.providers.base import Target
from momor.providers.transport import Timeouts, exchange
from momor.routing.policy import classify, counts_against_breaker

HANG_BOUND = 15.0
"""Seconds before a test calls the exchange hung; the timeouts under test are far shorter."""

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    await reader.readexactly(length)


async def close_without_answering(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    writer.close()


async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    await asyncio.sleep(HANG_BOUND * 2)
    writer.close()


async def run(handler: Handler, *, stream: bool, timeouts: Timeouts, client: httpx2.AsyncClient | None = None
              ) -> list:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = Provider(name="p", wire="openai_chat", baseUrl=f"http://127.0.0.1:{port}/v1")
    offering = Offering(provider="p", id="m", prices=Prices(input=1, output=1))
    model = Model(name="m", publisher="p", tier="low", capabilities=Capabilities(), offerings=[offering])
    target = Target(provider, offering, model, "sk-test")
    call = Call(system="", messages=[UserMessage(value="hi")], stream=stream)
    events: AsyncIterator = exchange(wire_for("openai_chat"), call, target, stream=stream, timeouts=timeouts,
                                     client=client)
    try:
        async with asyncio.timeout(HANG_BOUND):
            return [e async for e in events]
    finally:
        server.close()


@pytest.mark.parametrize("client", ["lean", "httpx"])
@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
async def test_a_connection_closed_before_any_response_byte_is_dropped_and_retried(stream, client):
    with pytest.raises(ProviderError) as info:
        await run(close_without_answering, stream=stream, timeouts=Timeouts(),
                  client=httpx2.AsyncClient() if client == "httpx" else None)
    assert info.value.kind == "dropped" and "before answering" in info.value.detail
    assert classify(info.value) == "retry" and not counts_against_breaker(info.value)


@pytest.mark.parametrize("client", ["lean", "httpx"])
async def test_a_provider_that_never_sends_its_headers_is_given_up_on_after_the_response_timeout(client):
    with pytest.raises(ProviderError) as info:
        await run(never_answer, stream=True, timeouts=Timeouts(first_token=HANG_BOUND * 2, response=0.2),
                  client=httpx2.AsyncClient() if client == "httpx" else None)
    assert info.value.kind == "timeout" and "did not begin its answer within 0.2 s" in info.value.detail


async def test_without_a_response_timeout_a_buffered_call_waits_the_first_token_timeout():
    """A buffered answer's headers come with the whole answer: the first-token timeout bounds it."""
    with pytest.raises(ProviderError) as info:
        await run(never_answer, stream=False, timeouts=Timeouts(first_token=0.2))
    assert info.value.kind == "timeout" and "within 0.2 s" in info.value.detail


def half_a_body(then: str) -> Handler:
    """Headers promising a 200-byte body, 20 bytes of it, then a stall or a hang-up."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
                     + b'{"id":"chatcmpl-1",')
        await writer.drain()
        if then == "stall":
            await asyncio.sleep(HANG_BOUND * 2)
        writer.close()

    return handler


@pytest.mark.parametrize("client", ["lean", "httpx"])
async def test_a_buffered_body_that_stalls_mid_way_fails_after_the_idle_timeout(client):
    with pytest.raises(ProviderError) as info:
        await run(half_a_body("stall"), stream=False, timeouts=Timeouts(idle=0.2),
                  client=httpx2.AsyncClient() if client == "httpx" else None)
    assert info.value.kind == "timeout" and info.value.detail == "The provider's answer stalled for 0.2 s."


@pytest.mark.parametrize("client", ["lean", "httpx"])
async def test_a_buffered_body_cut_mid_way_is_a_protocol_failure(client):
    with pytest.raises(ProviderError) as info:
        await run(half_a_body("close"), stream=False, timeouts=Timeouts(),
                  client=httpx2.AsyncClient() if client == "httpx" else None)
    assert info.value.kind == "protocol" and "mid-answer" in info.value.detail


async def test_the_keep_alive_race_is_retried_on_a_fresh_connection_and_served():
    """A pooled connection the provider closes as the next request arrives (as after a Lambda
    thaw): the request goes again on a new connection, and the call is served."""
    from momor.catalog import parse_catalog
    from momor.routing.attempts import Session
    from momor.routing.breaker import Breakers
    from momor.routing.keys import ResolvedKey
    from momor.routing.plan import plan
    from momor.routing.policy import Policy
    from momor.routing.recorder import Recorder
    from momor.routing.selectors import parse_prioritization, parse_selectors

    answer = (b'{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
              b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],'
              b'"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}')
    requests = []

    async def keep_alive_then_drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                break
            requests.append(1)
            if len(requests) == 2:  # the second request arrives on the pooled connection: dropped
                writer.close()
                return
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                         + str(len(answer)).encode() + b"\r\n\r\n" + answer)
            await writer.drain()

    server = await asyncio.start_server(keep_alive_then_drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    catalog = parse_catalog({
        "providers": [{"name": "p", "wire": "openai_chat", "baseUrl": f"http://127.0.0.1:{port}/v1"}],
        "models": [{"name": "m", "publisher": "p", "tier": "low",
                    "offerings": [{"provider": "p", "id": "m", "prices": {"input": 1, "output": 1}}]}],
    })
    candidates = plan(catalog, parse_selectors("m", None), parse_prioritization({}))
    breakers = Breakers(failures=1, cooldown=60)
    try:
        async with asyncio.timeout(HANG_BOUND):
            for _ in range(2):
                recorder = Recorder("rid", "/models", "native")
                call = Call(system="", messages=[UserMessage(value="hi")], stream=False)
                session = Session(call, candidates, recorder, resolve_key=lambda c: ResolvedKey("k", "saved"),
                                  policy=Policy(retry_base=0.001, retry_max=0.002), breakers=breakers)
                served = await session.open()
                assert served.served.provider.name == "p"
                assert [e async for e in served.events]
    finally:
        server.close()
    # The client sends the request again at once on a new connection (upstream_http.post): the attempt
    # loop never sees the race, and the call is one attempt, served.
    assert [(a.status, a.error) for a in recorder.attempts] == [("ok", None)]
    assert len(requests) == 3 and breakers.state("p/m") == "closed"


STREAM = [b'{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
          b'"delta":{"role":"assistant","content":"' + word + b'"},"finish_reason":null}]}'
          for word in (b"caf\xc3\xa9 ", b"au ", b"lait")]
STREAM.append(b'{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
              b'"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}')


async def streamed_in_odd_pieces(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    body = b"".join(b"data: " + event + b"\n\n" for event in STREAM) + b"data: [DONE]\n\n"
    chunks = [body[i:i + 7] for i in range(0, len(body), 7)]  # chunks that cut lines and characters
    wire = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    for at in range(0, len(wire), 50):
        writer.write(wire[at:at + 50])
        await writer.drain()
        await asyncio.sleep(0.001)
    writer.close()


async def test_a_stream_decodes_the_same_through_the_lean_client_and_httpx():
    lean = await run(streamed_in_odd_pieces, stream=True, timeouts=Timeouts())
    through_httpx = await run(streamed_in_odd_pieces, stream=True, timeouts=Timeouts(), client=httpx2.AsyncClient())
    assert lean == through_httpx
    assert "".join(e.text for e in lean if type(e).__name__ == "Delta") == "café au lait"
    assert any(type(e).__name__ == "Finish" for e in lean)
