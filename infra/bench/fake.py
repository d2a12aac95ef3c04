"""A fast fake provider for the benchmark: OpenAI Chat Completions and Anthropic Messages, buffered
and streamed, with fixed answers. Raw asyncio, no dependencies, no validation: it reads the body,
looks at two substrings and writes a precomputed answer, so it costs next to nothing per call.

    python -m infra.bench.fake --port 8790

Paths (the prefix chooses the answer's shape; the wire chooses the format):

    /<shape>/openai/v1/chat/completions     OpenAI; `"stream": true` in the body streams
    /<shape>/anthropic/v1/messages          Anthropic; likewise

    shape   short   a 10-chunk answer (buffered: the same text whole)
            long    a 1000-chunk answer, written as fast as the socket takes it
            paced   a 20-chunk answer, one chunk every PACE_MS milliseconds (buffering check)
            huge    a 100,000-chunk answer (infra/bench/memory.py: is the router's memory flat?)

Streams are sent with chunked transfer encoding, one HTTP chunk per SSE event.
"""

from __future__ import annotations

import argparse
import asyncio
import json

PACE_MS = 5.0
SHAPES = {"short": 10, "long": 1000, "paced": 20, "huge": 100_000}
WORD = "tok "
EMBED_DIMENSIONS = 256  # stack.EMBED_DIMENSIONS: the catalog's entry says the same length


def _http(status: str, headers: dict[str, str], body: bytes) -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"HTTP/1.1 {status}\r\n{head}content-length: {len(body)}\r\n\r\n".encode() + body


def _chunked_head(content_type: str) -> bytes:
    return (
        "HTTP/1.1 200 OK\r\n"
        f"content-type: {content_type}\r\n"
        "cache-control: no-cache\r\n"
        "transfer-encoding: chunked\r\n\r\n"
    ).encode()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _openai(n: int) -> tuple[bytes, list[bytes], bytes]:
    """Whole body; stream events; the usage event (sent when the request asks for it)."""
    text = WORD * n
    usage = {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n}
    whole = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "bench-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
        ],
        "usage": usage,
    }
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000, "model": "bench-model"}

    def event(delta: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {_dumps({**base, 'choices': [choice]})}\n\n".encode()

    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": WORD}) for _ in range(n)]
    events.append(event({}, "stop"))
    usage_event = f"data: {_dumps({**base, 'choices': [], 'usage': usage})}\n\n".encode()
    return _dumps(whole).encode(), events, usage_event


def _anthropic(n: int) -> tuple[bytes, list[bytes]]:
    text = WORD * n
    usage = {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": n}
    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }

    def event(data: dict) -> bytes:
        return f"event: {data['type']}\ndata: {_dumps(data)}\n\n".encode()

    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events = [
        event({"type": "message_start", "message": start}),
        event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    events += [
        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": WORD}})
        for _ in range(n)
    ]
    events += [
        event({"type": "content_block_stop", "index": 0}),
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": n},
            }
        ),
        event({"type": "message_stop"}),
    ]
    return _dumps(message).encode(), events


class _Answers:
    def __init__(self) -> None:
        self.json_head = {"content-type": "application/json"}
        self.buffered: dict[tuple[str, str], bytes] = {}
        self.streams: dict[tuple[str, str, bool], list[bytes]] = {}
        for shape, n in SHAPES.items():
            whole, events, usage_event = _openai(n)
            self.buffered[shape, "openai"] = _http("200 OK", self.json_head, whole)
            self.streams[shape, "openai", False] = [*events, b"data: [DONE]\n\n"]
            self.streams[shape, "openai", True] = [*events, usage_event, b"data: [DONE]\n\n"]
            whole, events = _anthropic(n)
            self.buffered[shape, "anthropic"] = _http("200 OK", self.json_head, whole)
            self.streams[shape, "anthropic", False] = events
        self.not_found = _http("404 Not Found", self.json_head, b'{"error":{"message":"no such path"}}')
        self.health = _http("200 OK", self.json_head, b'{"ok":true}')
        self._embeddings: dict[int, bytes] = {}

    def embeddings(self, body: bytes) -> bytes:
        """OpenAI's embeddings answer, a vector of EMBED_DIMENSIONS floats per input (made once per count)."""
        given = json.loads(body).get("input")
        count = len(given) if isinstance(given, list) else 1
        if count not in self._embeddings:
            vector = [round(((i * 7919) % 1000) / 1000 - 0.5, 6) for i in range(EMBED_DIMENSIONS)]
            answer = {"object": "list", "model": "bench-embed", "usage": {"prompt_tokens": 8 * count,
                                                                          "total_tokens": 8 * count},
                      "data": [{"object": "embedding", "index": i, "embedding": vector} for i in range(count)]}
            self._embeddings[count] = _http("200 OK", self.json_head, _dumps(answer).encode())
        return self._embeddings[count]


ANSWERS = _Answers()


class FakeProtocol(asyncio.Protocol):
    """HTTP/1.1 with keep-alive; requests on one connection are answered in order."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._next()

    def _next(self) -> None:
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end]).decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buf) < end + 4 + length:
                return
            body = bytes(self.buf[end + 4 : end + 4 + length])
            del self.buf[: end + 4 + length]
            path = head.split(" ", 2)[1]
            if self._answer(path, body):
                return  # a paced stream: the rest waits until it is done

    def _answer(self, path: str, body: bytes) -> bool:
        assert self.transport is not None
        parts = path.strip("/").split("/")
        if path == "/healthz":
            self.transport.write(ANSWERS.health)
            return False
        if len(parts) < 2 or parts[0] not in SHAPES or parts[1] not in ("openai", "anthropic"):
            self.transport.write(ANSWERS.not_found)
            return False
        shape, wire = parts[0], parts[1]
        if path.endswith("/embeddings"):
            self.transport.write(ANSWERS.embeddings(body))
            return False
        streamed = b'"stream":true' in body or b'"stream": true' in body
        if not streamed:
            self.transport.write(ANSWERS.buffered[shape, wire])
            return False
        usage = wire == "openai" and b'"include_usage"' in body
        events = ANSWERS.streams[shape, wire, usage]
        ctype = "text/event-stream; charset=utf-8"
        if shape == "paced":
            self.busy = True
            asyncio.get_running_loop().create_task(self._paced(ctype, events))
            return True
        self.transport.write(_chunked_head(ctype) + b"".join(_chunk(e) for e in events) + b"0\r\n\r\n")
        return False

    async def _paced(self, ctype: str, events: list[bytes]) -> None:
        assert self.transport is not None
        self.transport.write(_chunked_head(ctype))
        for i, event in enumerate(events):
            if i:
                await asyncio.sleep(PACE_MS / 1000)
            if self.transport.is_closing():
                return
            self.transport.write(_chunk(event))
        self.transport.write(b"0\r\n\r\n")
        self.busy = False
        self._next()


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(FakeProtocol, host, port, backlog=1024)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fast fake OpenAI/Anthropic provider for the benchmark.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    args = parser.parse_args(argv)
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
