"""door_http.headers_of: one dict of a request's headers, answering as Starlette's `request.headers.get`."""

from __future__ import annotations

from starlette.requests import Request

from momor.door_http import headers_of

RAW = [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer first"), (b"x-api-key", b"k\xe9y"),
       (b"authorization", b"Bearer second"), (b"accept", b"*/*")]


def _request(raw: list[tuple[bytes, bytes]]) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/models", "headers": raw})


def test_every_header_answers_as_starlette_does_the_first_of_a_repeated_one_included() -> None:
    request = _request(RAW)
    found = headers_of(request)
    for name in ("host", "authorization", "x-api-key", "accept", "content-type", "x-momor-explain"):
        assert found.get(name) == request.headers.get(name), name
    assert found["authorization"] == "Bearer first" and found["x-api-key"] == "k\u00e9y"  # latin-1, as HTTP


def test_made_once_a_request() -> None:
    request = _request(RAW)
    assert headers_of(request) is headers_of(request)
    assert headers_of(_request(RAW)) is not headers_of(request)  # another request: its own
