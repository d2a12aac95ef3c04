"""Fuzzing Momor's routes over real HTTP: what every dialect's fuzz test shares.

The end-to-end harness (`momor`, `fake`) is re-exported from tests/integration/conftest.py, so a
fuzz test drives the same uvicorn-served Momor, fake providers and DynamoDB Local as the
integration tests. (A non-root conftest may not declare `pytest_plugins`; importing the fixture
functions registers them here. Running both folders in one session starts a second Momor and fake
server for this folder: a second or so, on free ports.)

The invariant every fuzz test checks, whatever it sends: no 5xx of Momor's own making, no hang
(every request has a client timeout), no traceback in the body, X-Momor-Request-Id on the answer,
and a refusal in the dialect's own error shape. The one 5xx allowed is the router's honest answer
that no candidate could serve (seed 000): a near-valid body can carry a parameter Momor passes on
unchecked ("Values are not checked: a provider that refuses one moves the call to the next
candidate") which every strict fake then refuses.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.integration import conftest as harness

# The harness's fixtures, registered for this folder too (see the module docstring).
fake_session, fake, momor_server, momor = harness.fake_session, harness.fake, harness.momor_server, harness.momor

FUZZ_SETTINGS = settings(
    max_examples=60,
    # One example is one HTTP round trip, sometimes to a fake provider, on a machine that may be busy:
    # a generous bound, so a slow case (a backtracking regex, a stalled loop) fails as slow, by name.
    deadline=timedelta(seconds=20),
    # `momor` is made once per test function and shared by its examples on purpose: a fresh server,
    # tables and key per example would cost seconds each.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large, HealthCheck.large_base_example],
    database=None,  # no .hypothesis folder in the shared tree; a failure prints its example anyway
    print_blob=True,
)
CLIENT_TIMEOUT = httpx2.Timeout(15.0, connect=5.0)
"""Longer than anything Momor should take on these inputs; a request that outlasts it is a hang."""
REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")
NO_CANDIDATE = "No candidate could serve the call."
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\.py\", line \d+")


@pytest.fixture
def client(momor: Any):
    """One pooled client per test, so the examples reuse connections rather than open hundreds."""
    with httpx2.Client(base_url=momor.url, timeout=CLIENT_TIMEOUT) as made:
        yield made


# --- values ----------------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)  # json.dumps writes inf as Infinity: not JSON, which Momor must refuse
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
huge_strings = st.builds(lambda ch, n: ch * n, st.characters(codec="utf-8"),
                         st.sampled_from([5_000, 300_000, 1_000_000]))


def nested(depth: int, leaf: Any = 1, *, kind: str = "list") -> Any:
    """`depth` levels of lists (or objects) around `leaf`, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


deep_values = st.builds(nested, st.integers(min_value=10, max_value=200), st.just(1),
                        kind=st.sampled_from(["list", "dict"]))
"""Deep, but shallow enough for json.dumps; deeper bodies are written as bytes (`deep_bytes`)."""


def weird_values(words: list[str]) -> st.SearchStrategy[Any]:
    """A value of any type for a field: scalars, containers, huge or deep ones, and `words` (enum
    values, selectors, durations) valid and not, so some mutations still pass validation."""
    return st.one_of(
        scalars,
        st.sampled_from(words),
        st.lists(st.sampled_from(words) | scalars, max_size=3),
        st.dictionaries(st.sampled_from(words) | st.text(max_size=8), scalars, max_size=3),
        json_values,
        huge_strings,
        deep_values,
    )


def put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`doc` with `value` at `path`, making the objects and lists on the way; a path through a
    scalar replaces the scalar. Returns the (possibly new) root."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        doc = doc if isinstance(doc, list) else []
        while len(doc) <= head:
            doc.append({})
        doc[head] = put(doc[head], rest, value)
    else:
        doc = doc if isinstance(doc, dict) else {}
        doc[head] = put(doc.get(head), rest, value)
    return doc


def mutated(base: Callable[[], dict[str, Any]], paths: list[tuple[Any, ...]], words: list[str]):
    """A valid body with one to three fields replaced (or added) by weird values."""
    mutation = st.tuples(st.sampled_from(paths), weird_values(words))

    def apply(changes: list[tuple[tuple[Any, ...], Any]]) -> dict[str, Any]:
        doc = base()
        for path, value in changes:
            doc = put(doc, path, value)
        return doc

    return st.lists(mutation, min_size=1, max_size=3).map(apply)


# --- bytes ------------------------------------------------------------------------------------------


def deep_bytes(depth: int, opener: str) -> bytes:
    """`depth` levels of nesting as text, deeper than Python's json (or orjson, past 1024) can go."""
    close = {"[": "]", '{"a":': "}"}[opener]
    return (opener * depth + "1" + close * depth).encode()


def raw_bodies(valid: bytes) -> st.SearchStrategy[bytes]:
    """Bodies that are not a JSON object a dialect could read: noise, broken UTF-8, truncation,
    lone surrogates, non-finite numbers and nesting past every parser's limit."""
    invalid_utf8 = st.sampled_from([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80",
                                    b"\xe2\x82"])
    spliced = st.builds(lambda cut, bad: valid[:cut] + bad + valid[cut:],
                        st.integers(min_value=0, max_value=len(valid)), invalid_utf8)
    escapes = st.sampled_from([b"\\ud800", b"\\udfff", b"\\u0000", b"\\ud83d\\ude00", b"\\x41", b"\\"])
    in_string = st.builds(lambda esc: valid.replace(b"Hello", b"He" + esc + b"llo", 1), escapes)
    return st.one_of(
        st.binary(max_size=300),
        spliced,
        in_string,
        st.builds(lambda cut: valid[:cut], st.integers(min_value=0, max_value=max(len(valid) - 1, 0))),
        st.builds(deep_bytes, st.integers(min_value=30, max_value=5000), st.sampled_from(["[", '{"a":'])),
        st.sampled_from([b"", b" ", b"null", b"[]", b"0", b'""', b"NaN", b"Infinity", b'{"a": NaN}',
                         b"{}", b"\xef\xbb\xbf{}", b'{"a":1,"a":2}', b'{"maxTokens": 1e400}']),
        st.builds(lambda text: text.encode("utf-16"), st.text(max_size=40)),
    )


# --- headers ----------------------------------------------------------------------------------------

_header_text = st.text(alphabet=string.ascii_letters + string.digits + " -_./;=,*+:", max_size=60).map(str.strip)
content_types = st.one_of(
    st.sampled_from([
        "application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "application/json;",
        "application/json; charset=latin-1", "text/plain", "text/json", "application/jsonl",
        "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/problem+json",
        "*/*", "", ";", "application/json, text/plain",
    ]),
    _header_text,
)
accepts = st.one_of(
    st.none(),
    st.sampled_from(["application/json", "text/event-stream", "*/*", "text/html", "application/json;q=0",
                     "text/*;q=0.0, application/*", "application/xml", "", ",,,", "*/*;q=abc"]),
    _header_text,
)


def headers_strategy(api_key: str, *, auth: str = "bearer") -> st.SearchStrategy[dict[str, str]]:
    """Random headers around a request: content type, Accept, Authorization right and wrong, extras."""
    good = {"bearer": {"Authorization": f"Bearer {api_key}"}, "x-api-key": {"x-api-key": api_key}}[auth]
    auths = st.sampled_from([
        good, {}, {"Authorization": "Bearer"}, {"Authorization": f"Bearer  \t {api_key}"},
        {"Authorization": f"Basic {api_key}"},
        {"Authorization": f"bearer {api_key}"}, {"Authorization": f"Bearer {api_key}x"},
        {"Authorization": "Bearer momor-" + "A" * 5000}, {"x-api-key": "nope"},
    ])
    extras = st.dictionaries(
        st.text(alphabet=string.ascii_letters + "-", min_size=1, max_size=20).filter(
            lambda n: n.lower() not in {"content-length", "host", "transfer-encoding", "connection", "content-type",
                                        "accept", "authorization", "x-api-key", "expect", "upgrade"}),
        _header_text, max_size=4)

    def build(auth_headers, content_type, accept, extra):
        headers = {**extra, **auth_headers, "Content-Type": content_type}
        if accept is not None:
            headers["Accept"] = accept
        return headers

    return st.builds(build, auths, content_types, accepts, extras)


# --- checks -----------------------------------------------------------------------------------------


def post(client: httpx2.Client, path: str, *, body: Any = None, content: bytes | None = None,
         headers: dict[str, str]) -> httpx2.Response:
    """POST and read the whole answer (a stream included) within the client timeout."""
    if content is None:
        content = json.dumps(body, ensure_ascii=False).encode()  # real UTF-8, not \u escapes
    return client.post(path, content=content, headers=headers)


def check_common(response: httpx2.Response) -> Any:
    """What every answer of every dialect owes: no 5xx but the router's own, no traceback, the
    request id. Returns the parsed JSON body (None for a stream)."""
    text = response.text
    assert not _TRACEBACK.search(text), f"a traceback in the body: {text[:2000]}"
    assert REQUEST_ID.match(response.headers.get("x-momor-request-id", "")), (
        f"no X-Momor-Request-Id on a {response.status_code}: {dict(response.headers)}")
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        assert response.status_code == 200, response.status_code
        return None
    try:
        doc = response.json()
    except ValueError:
        raise AssertionError(f"not JSON ({response.status_code}): {text[:2000]}") from None
    return doc


def allowed_5xx(status: int, message: str) -> bool:
    """The router's answer that no candidate could serve: 502, or 503 under zero data retention
    (529 in the Anthropic dialect, which calls a capacity refusal "overloaded")."""
    return status in (502, 503, 529) and message.startswith(NO_CANDIDATE)


def sse_frames(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of an SSE body."""
    frames, event = [], ""
    for line in text.splitlines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            frames.append((event, line[6:]))
            event = ""
    return frames
