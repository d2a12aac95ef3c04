"""HTTP plumbing every door shares: request ids, header checks, a size-capped body read.

Each check raises a RequestError; the door writes it in its own dialect's error shape.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from .config import describe_bytes, get_config
from .errors import MomorError, RequestError

MAX_JSON_DEPTH = 64
"""Deeper JSON is refused before it reaches a model: no legitimate call nests this deep."""

REQUEST_ID_HEADER = "X-Momor-Request-Id"
"""The header naming a call's id (its record, GET /generations/<id>) on every answer."""


def id_headers(request_id: str) -> dict[str, str]:
    """The call's id under every name a caller reads it by: Momor's own, the OpenAI SDK's
    (`x-request-id`, its `_request_id`) and the Anthropic SDK's (`request-id`)."""
    return {REQUEST_ID_HEADER: request_id, "x-request-id": request_id, "request-id": request_id}


def retry_header(exc: MomorError) -> dict[str, str]:
    """x-should-retry, which both SDKs obey over their own status rules: a refusal of the request
    as written is not retried, a failure that may pass is."""
    return {"x-should-retry": "true" if exc.retryable else "false"}


def new_request_id() -> str:
    """32 random hex digits (as uuid4().hex is, without building a UUID: a tenth of the time)."""
    return os.urandom(16).hex()


def headers_of(request: Request) -> dict[str, str]:
    """The request's headers by (lower-case) name, the first of a repeated one as Starlette's
    `request.headers.get` answers: one dict a request, made at the first ask and kept in its scope.
    A routed call asks for six headers; Starlette scans the whole list for each (4 µs against 1)."""
    found = request.scope.get("momor.headers")
    if found is None:
        found = {}
        for name, value in request.scope["headers"]:
            key = name.decode("latin-1")  # ASGI header names are lower-case (Starlette relies on it too)
            if key not in found:
                found[key] = value.decode("latin-1")
        request.scope["momor.headers"] = found
    return found


def check_content_type(request: Request) -> None:
    media = headers_of(request).get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise RequestError("Content-Type must be application/json.", status=415)


def check_accept(request: Request, *, streaming_allowed: bool = True) -> None:
    """406 unless Accept allows application/json or text/event-stream. It never changes which
    one the caller gets (seed 000)."""
    accept = headers_of(request).get("accept")
    if not accept:
        return
    allowed = {"*/*", "application/*", "application/json"}
    if streaming_allowed:
        allowed |= {"text/*", "text/event-stream"}
    for item in accept.split(","):
        media, *params = (p.strip().lower() for p in item.split(";"))
        if media in allowed and not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00") for p in params):
            return
    raise RequestError("Accept must allow application/json or text/event-stream.", status=406)


async def read_body(request: Request, limit: int | None = None) -> bytes:
    """The body, refused with 413 as soon as it passes the limit (never read whole first): seed
    000's 30 MiB, or what the deployment lowered it to (MOMOR_MAX_BODY_BYTES)."""
    limit = get_config().max_body_bytes if limit is None else limit
    declared = headers_of(request).get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise body_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise body_too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


LARGE_FILES_BY_URL = ('Send a large file by URL instead of inline: a File {"type": "url", "value": "https://..."} '
                      "(an http(s) image_url or a source of type url in the OpenAI and Anthropic dialects).")
"""What a 413 for a body or an inline file tells the caller: on Lambda the body limit is what an
invocation can carry (config.LAMBDA_MAX_BODY_BYTES), while a file by URL is fetched by Momor."""


def body_too_large(limit: int) -> RequestError:
    return RequestError(f"The body is larger than {describe_bytes(limit)}. {LARGE_FILES_BY_URL}", status=413)


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A JSON string, escapes included (what `_values_at_most` leaves out of its count)."""


def _values_at_most(body: bytes) -> int:
    """How many values `body` may hold at most, without parsing it: every value after a container's
    first follows a comma, and every container opens with a bracket, so 1 + commas + brackets bounds
    them. Counted in the bytes as written first (three C-speed counts, nothing allocated: the path of
    nearly every body); only a body past the bound on that count is counted again without its
    strings, whose commas are text (a long document pasted into a prompt). A body shorter than two
    bytes a value is not counted at all: every value but the last takes a byte and a separator."""
    limit = get_config().max_json_values
    if len(body) <= 2 * limit:
        return len(body) // 2 + 1
    count = 1 + body.count(b",") + body.count(b"{") + body.count(b"[")
    if count <= limit:
        return count
    bare = _STRING.sub(b"", body)
    return 1 + bare.count(b",") + bare.count(b"{") + bare.count(b"[")


def values_too_many(limit: int) -> RequestError:
    return RequestError(f"The body holds more than {limit:,} JSON values (MOMOR_MAX_JSON_VALUES); send fewer, "
                        "larger values (a file as one base64 string, not an array).", status=413)


def parse_json_object(body: bytes) -> dict[str, Any]:
    if not body:
        raise RequestError("The body is empty; send a JSON object.")
    # Before parsing: a body of many small values takes many times its size in memory once parsed
    # (5.8 MB of `{}` took 280 MB, past a small function's size), so their number is bounded first.
    if _values_at_most(body) > get_config().max_json_values:
        raise values_too_many(get_config().max_json_values)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise RequestError(f"The body is not valid JSON: {exc.msg}.") from None
    if not isinstance(value, dict):
        raise RequestError("The body must be a JSON object.")
    if _too_deep(value):
        raise RequestError(f"The body nests deeper than {MAX_JSON_DEPTH} levels.")
    return value


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return False


def sse(event: str | None, data: bytes) -> bytes:
    """One server-sent event frame. Data of several lines (a provider's own event, passed
    through, may be) goes as one `data:` line each, which a reader joins back with newlines."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return head + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


PROBLEM = "application/problem+json"


def json_response(payload: Any, status: int = 200, media_type: str = "application/json") -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type=media_type)
