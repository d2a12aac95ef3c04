"""The streaming bridge (momor.lambda_stream) end to end: a real process against a Runtime API stand-in.

What streaming means here is checked on arrival times at the stand-in, never on speed: the SSE route
sends an event every 0.3 s, so a streamed body arrives spread over more than a second and its first
event arrives long before the stream ends, while a buffered one arrives all at once at the end.
`test_a_buffered_body_fails_the_streaming_check` runs that check against a response buffered on
purpose, to show it can fail.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import StreamingResponse

from .conftest import FUNCTION_NAME, Runtime
from .runtime_api_standin import NUL8, StreamedResponse

APP = "tests.lambda.test_stream_bridge:app"
EVENTS = 5
GAP_S = 0.3

# ---------------------------------------------------------------- the app under the bridge

startups = 0


@asynccontextmanager
async def lifespan(app: FastAPI):
    global startups
    startups += 1
    yield {"started_by": os.getpid()}


app = FastAPI(lifespan=lifespan)


@app.get("/v1/stream")
async def sse() -> StreamingResponse:
    async def events():
        for i in range(EVENTS):
            if i:
                await asyncio.sleep(GAP_S)
            yield f"event: tick\ndata: {i}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream", headers={"cache-control": "no-cache"})


@app.get("/v1/stream-then-fail")
async def sse_then_fail() -> StreamingResponse:
    async def events():
        yield "data: 0\n\n"
        await asyncio.sleep(0.1)
        raise ValueError("upstream went away mid-stream")

    return StreamingResponse(events(), media_type="text/event-stream")


@app.get("/v1/models")
async def models() -> dict[str, Any]:
    return {"object": "list", "data": [{"id": "fast-small", "object": "model", "owned_by": "momor"}]}


@app.post("/v1/echo")
async def echo(request: Request, response: Response) -> dict[str, Any]:
    response.status_code = 201
    response.headers["x-momor-route"] = "echo"
    response.set_cookie("session", "s1")
    response.set_cookie("theme", "dark")
    return {
        "query": dict(request.query_params),
        "cookies": dict(request.cookies),
        "body": (await request.body()).decode(),
        "path": request.url.path,
    }


@app.get("/v1/whoami")
async def whoami(request: Request) -> dict[str, Any]:
    context = request.scope["aws.context"]
    return {
        "pid": os.getpid(),
        "startups": startups,
        "started_by": request.state.started_by,
        "request_id": context.aws_request_id,
        "function_name": context.function_name,
        "memory_limit_in_mb": context.memory_limit_in_mb,
        "invoked_function_arn": context.invoked_function_arn,
        "log_group_name": context.log_group_name,
        "remaining_ms": context.get_remaining_time_in_millis(),
        "trace_id": os.environ.get("_X_AMZN_TRACE_ID"),
    }


@app.get("/v1/boom")
async def boom() -> None:
    raise RuntimeError("route failed before answering")


class RequestControls:
    """Request-triggered misbehaviour, to show the streaming assertions can fail."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if headers.get(b"x-test-buffer"):
            await self.inner(scope, receive, _buffering(send))
        elif headers.get(b"x-test-eager-disconnect"):
            await self.inner(scope, _eager_disconnect(receive), send)
        else:
            await self.inner(scope, receive, send)


def _buffering(send: Any) -> Any:
    """Hold every body message until the last, as a buffering bridge would, then send them all."""
    held: list[dict[str, Any]] = []

    async def buffered_send(message: dict[str, Any]) -> None:
        if message["type"] != "http.response.body":
            await send(message)
            return
        held.append(message)
        if not message.get("more_body", False):
            for each in held:
                await send(each)

    return buffered_send


def _eager_disconnect(receive: Any) -> Any:
    """A receive that reports the client gone as soon as the request is read."""
    read = False

    async def eager_receive() -> dict[str, Any]:
        nonlocal read
        if not read:
            read = True
            return await receive()
        return {"type": "http.disconnect"}

    return eager_receive


app.add_middleware(RequestControls)


async def no_response_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A bare ASGI app that fails before sending anything (FastAPI would send a 500 page first)."""
    if scope["type"] == "lifespan":
        return  # lifespan unsupported; the bridge carries on
    raise LookupError("no response at all")


# ---------------------------------------------------------------- helpers


def assert_streamed(response: StreamedResponse) -> None:
    """The body arrived spread out, as produced: not all at once at the end."""
    arrivals = [at for at, _ in response.body_chunks]
    assert len(arrivals) >= 2, "a streamed SSE body arrives in several chunks"
    assert arrivals[-1] - arrivals[0] >= 0.5, f"chunks arrived together: {arrivals}"
    assert response.ended_at is not None
    assert response.ended_at - arrivals[0] >= 0.5, "the first event arrived only when the stream ended"


def assert_streaming_request(response: StreamedResponse) -> None:
    headers = response.headers
    assert headers["lambda-runtime-function-response-mode"] == "streaming"
    assert headers["transfer-encoding"].lower() == "chunked"
    assert headers["content-type"] == "application/vnd.awslambda.http-integration-response"
    assert [t.strip() for t in headers["trailer"].split(",")] == [
        "Lambda-Runtime-Function-Error-Type",
        "Lambda-Runtime-Function-Error-Body",
    ]


def assert_compact_prelude(response: StreamedResponse) -> dict[str, Any]:
    chunk = response.prelude_chunk
    assert chunk.endswith(NUL8) and not chunk[:-8].endswith(b"\x00"), "exactly 8 NULs end the prelude"
    prelude = response.prelude
    assert chunk[:-8] == json.dumps(prelude, separators=(",", ":")).encode(), "compact JSON"
    return prelude


@pytest.fixture(scope="module")
def served(module_runtime: Runtime) -> Runtime:
    """One bridge process serving `app` for the tests of this module that share it."""
    module_runtime.start(APP)
    return module_runtime


# ---------------------------------------------------------------- streaming


def test_sse_events_arrive_as_the_app_sends_them(served: Runtime, rest_event) -> None:
    request_id = served.standin.enqueue(rest_event("GET", "/v1/stream", headers={"Accept": "text/event-stream"}))
    response = served.standin.wait_response(request_id)

    assert_streaming_request(response)
    prelude = assert_compact_prelude(response)
    assert prelude["statusCode"] == 200
    assert prelude["headers"]["content-type"].startswith("text/event-stream")
    assert prelude["headers"]["cache-control"] == "no-cache"
    # One chunk per event, as the app sent them: no coalescing, no empty chunk from Starlette's final
    # empty body message (it would have ended the stream early and left bytes the stand-in rejects).
    assert [data for _, data in response.body_chunks] == [f"event: tick\ndata: {i}\n\n".encode() for i in range(EVENTS)]
    assert_streamed(response)
    assert response.trailers == {}
    assert served.standin.protocol_errors == []


def test_a_buffered_body_fails_the_streaming_check(served: Runtime, rest_event) -> None:
    # Same route, body held back until the end by the app-side control: every chunk still arrives,
    # but together, and the streaming assertion must notice.
    request_id = served.standin.enqueue(rest_event("GET", "/v1/stream", headers={"X-Test-Buffer": "1"}))
    response = served.standin.wait_response(request_id)

    assert response.body == b"".join(f"event: tick\ndata: {i}\n\n".encode() for i in range(EVENTS))
    with pytest.raises(AssertionError):
        assert_streamed(response)


def test_a_receive_that_returns_at_once_cuts_the_stream(served: Runtime, rest_event) -> None:
    # Why receive() must block: Starlette stops streaming as soon as receive() says the client left.
    # The bridge's receive blocks (the SSE test gets every event); this control shows what that
    # prevents. Here the cut comes before the first event: the app returns without a response, which
    # the bridge reports as a failure rather than as an empty success.
    request_id = served.standin.enqueue(rest_event("GET", "/v1/stream", headers={"X-Test-Eager-Disconnect": "1"}))
    kind, outcome = served.standin.wait_outcome(request_id)

    if kind == "error":
        assert outcome.payload["errorType"] == "IncompleteResponse"
    else:
        assert len(outcome.body_chunks) < EVENTS
        assert outcome.trailers["lambda-runtime-function-error-type"] == "IncompleteResponse"


def test_buffered_json_route_works_through_the_stream(served: Runtime, rest_event) -> None:
    request_id = served.standin.enqueue(rest_event("GET", "/v1/models"))
    response = served.standin.wait_response(request_id)

    assert_streaming_request(response)
    prelude = assert_compact_prelude(response)
    assert prelude["statusCode"] == 200
    assert prelude["headers"]["content-type"] == "application/json"
    assert json.loads(response.body) == {
        "object": "list",
        "data": [{"id": "fast-small", "object": "model", "owned_by": "momor"}],
    }
    assert int(prelude["headers"]["content-length"]) == len(response.body)
    assert response.trailers == {}


# ---------------------------------------------------------------- failures


def test_failure_mid_stream_ends_with_error_trailers(served: Runtime, rest_event) -> None:
    request_id = served.standin.enqueue(rest_event("GET", "/v1/stream-then-fail"))
    response = served.standin.wait_response(request_id)

    assert response.prelude["statusCode"] == 200
    assert [data for _, data in response.body_chunks] == [b"data: 0\n\n"]
    assert response.trailers["lambda-runtime-function-error-type"] == "ValueError"
    error = json.loads(base64.b64decode(response.trailers["lambda-runtime-function-error-body"]))
    assert error["errorType"] == "ValueError"
    assert error["errorMessage"] == "upstream went away mid-stream"
    assert error["stackTrace"] and any("sse_then_fail" in line or "events" in line for line in error["stackTrace"])
    assert request_id not in served.standin.errors, "/error is only for failures before any byte"


def test_fastapi_route_error_is_answered_as_a_500(served: Runtime, rest_event) -> None:
    # FastAPI's ServerErrorMiddleware sends its 500 page and then re-raises; the response is complete
    # by then, so the caller gets the 500 and the bridge only logs the exception.
    request_id = served.standin.enqueue(rest_event("GET", "/v1/boom"))
    response = served.standin.wait_response(request_id)

    assert response.prelude["statusCode"] == 500
    assert response.body == b"Internal Server Error"
    assert response.trailers == {}
    assert request_id not in served.standin.errors


def test_failure_before_any_output_goes_to_error(runtime: Runtime, rest_event) -> None:
    runtime.start("tests.lambda.test_stream_bridge:no_response_app")
    request_id = runtime.standin.enqueue(rest_event("GET", "/v1/models"))

    error = runtime.standin.wait_error(request_id)

    assert error.payload["errorType"] == "LookupError"
    assert error.payload["errorMessage"] == "no response at all"
    assert isinstance(error.payload["stackTrace"], list)
    assert error.headers["lambda-runtime-function-error-type"] == "LookupError"
    assert request_id not in runtime.standin.responses, "nothing may be streamed before /error"


def test_an_event_that_is_not_http_goes_to_error(served: Runtime) -> None:
    request_id = served.standin.enqueue({"source": "aws.events", "detail-type": "Scheduled Event"})

    error = served.standin.wait_error(request_id)

    assert error.payload["errorType"] == "RuntimeError"
    assert request_id not in served.standin.responses


def test_an_app_that_cannot_be_imported_is_an_init_error(runtime: Runtime) -> None:
    bridge = runtime.start("tests.lambda.no_such_module:app")

    error = runtime.standin.wait_init_error()

    assert error.payload["errorType"] == "Runtime.ImportModuleError"
    assert error.headers["lambda-runtime-function-error-type"] == "Runtime.ImportModuleError"
    assert bridge.wait_exit() != 0


def test_the_wrapper_without_momor_asgi_app_fails_the_init(runtime: Runtime) -> None:
    """It used to start the stock runtime, which answers buffered JSON a STREAM integration cannot read."""
    bridge = runtime.start("", via_wrapper=True)

    error = runtime.standin.wait_init_error()

    assert error.payload["errorType"] == "Runtime.MalformedHandlerName"
    assert "MOMOR_ASGI_APP is not set" in error.payload["errorMessage"]
    assert bridge.wait_exit() != 0


# ---------------------------------------------------------------- event sources


def test_http_api_v2_event_gets_cookies_in_the_prelude(served: Runtime, http_api_event) -> None:
    event = http_api_event(
        "POST",
        "/v1/echo",
        raw_query="model=fast-small&stream=false",
        headers={"content-type": "application/json"},
        cookies=["team=blue", "region=eu"],
        body=b'{"messages": []}',
    )
    request_id = served.standin.enqueue(event)
    response = served.standin.wait_response(request_id)

    prelude = assert_compact_prelude(response)
    assert prelude["statusCode"] == 201
    assert prelude["headers"]["x-momor-route"] == "echo"
    assert "set-cookie" not in prelude["headers"], "v2 carries cookies in their own field"
    assert [cookie.split(";")[0] for cookie in prelude["cookies"]] == ["session=s1", "theme=dark"]
    assert json.loads(response.body) == {
        "query": {"model": "fast-small", "stream": "false"},
        "cookies": {"team": "blue", "region": "eu"},
        "body": '{"messages": []}',
        "path": "/v1/echo",
    }


def test_rest_v1_event_gets_multi_value_headers_in_the_prelude(served: Runtime, rest_event) -> None:
    event = rest_event(
        "POST",
        "/v1/echo",
        query={"model": ["fast-small"]},
        headers={"Content-Type": "application/json", "Cookie": "team=blue"},
        body=b'{"messages": []}',
    )
    request_id = served.standin.enqueue(event)
    response = served.standin.wait_response(request_id)

    prelude = assert_compact_prelude(response)
    assert prelude["statusCode"] == 201
    assert "cookies" not in prelude
    assert [c.split(";")[0] for c in prelude["multiValueHeaders"]["set-cookie"]] == ["session=s1", "theme=dark"]
    assert json.loads(response.body)["query"] == {"model": "fast-small"}
    assert json.loads(response.body)["cookies"] == {"team": "blue"}


# ---------------------------------------------------------------- the process


def test_invocations_reuse_the_process_and_lifespan_runs_once(runtime: Runtime, rest_event) -> None:
    # Started as the managed runtime starts it, through the exec wrapper, from outside the repo.
    bridge = runtime.start(APP, via_wrapper=True)
    trace = "Root=1-65a1b2c3-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"
    first_id = runtime.standin.enqueue(rest_event("GET", "/v1/whoami"), trace_id=trace, timeout_s=30)
    first = json.loads(runtime.standin.wait_response(first_id).body)
    second_id = runtime.standin.enqueue(rest_event("GET", "/v1/whoami"))
    second = json.loads(runtime.standin.wait_response(second_id).body)

    assert first["pid"] == second["pid"] == bridge.process.pid, bridge.log()
    assert first["startups"] == second["startups"] == 1
    assert first["started_by"] == first["pid"], "lifespan state reaches request.state"
    assert (first["request_id"], second["request_id"]) == (first_id, second_id)
    assert first["function_name"] == FUNCTION_NAME
    assert first["memory_limit_in_mb"] == 512
    assert first["log_group_name"] == f"/aws/lambda/{FUNCTION_NAME}"
    assert first["invoked_function_arn"].endswith(f":function:{FUNCTION_NAME}")
    assert 0 < first["remaining_ms"] <= 30_000
    assert first["trace_id"] == trace
    assert second["trace_id"] is None, "a trace id must not leak into the next invocation"
