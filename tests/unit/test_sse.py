"""The SSE decoder: the event-stream line rules, linear work however an event is split, and a bound
on one event's size (issue 10, item 18)."""

from __future__ import annotations

import threading

import pytest

from momor.errors import ProviderError
from momor.providers.base import SSEEvent
from momor.providers.sse import MAX_EVENT, SSEDecoder

HANG_BOUND = 20.0
"""Seconds a decode may take before the test calls it hung (a linear decode takes well under one)."""


def feed(text: str, size: int, decoder: SSEDecoder | None = None) -> list[SSEEvent]:
    decoder = decoder or SSEDecoder()
    events: list[SSEEvent] = []
    for at in range(0, len(text), size):
        events += decoder.decode(text[at:at + size])
    return events + decoder.flush()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_line_endings_comments_and_multi_line_data_in_any_split(size):
    text = ": ping\r\nevent: delta\r\ndata: one\r\ndata: two\r\n\r\ndata: {\"x\": 1}\r\rdata: three\n\ndata: tail"
    assert feed(text, size) == [SSEEvent("delta", "one\ntwo"), SSEEvent(None, '{"x": 1}'), SSEEvent(None, "three"),
                                SSEEvent(None, "tail")]


def test_a_large_event_in_small_reads_is_decoded_in_linear_time():
    """24 MiB in 8 KiB reads: re-scanning the unfinished buffer on every read (the old decoder)
    copies and scans it 3,000 times, minutes of event-loop time; a linear decoder takes a moment.
    The thread only bounds the hang."""
    data = "x" * (24 * 1024 * 1024)
    text = f"event: big\ndata: {data}\n\n"
    out: list[list[SSEEvent]] = []
    worker = threading.Thread(target=lambda: out.append(feed(text, 8192, SSEDecoder(max_event=32 * 1024 * 1024))),
                              daemon=True)
    worker.start()
    worker.join(HANG_BOUND)
    assert not worker.is_alive(), "decoding hung: the decoder is not linear in what it is fed"
    [[event]] = out
    assert event.event == "big" and event.data == data


@pytest.mark.parametrize("read", [64, 100_000], ids=["small-reads", "one-read"])
@pytest.mark.parametrize("split", ["one-line", "many-lines", "named"])
def test_an_event_larger_than_the_bound_is_a_protocol_error(split, read):
    decoder = SSEDecoder(max_event=1000)
    text = {"one-line": "data: " + "y" * 1200, "many-lines": "data: yyyyyyyyy\n" * 120,
            "named": "event: delta\ndata: " + "y" * 1200}[split] + "\n\n"
    with pytest.raises(ProviderError) as info:
        feed(text, read, decoder)
    assert info.value.kind == "protocol" and "larger than 1000" in info.value.detail


def test_many_events_below_the_bound_pass_whatever_their_total():
    decoder = SSEDecoder(max_event=100)
    events = feed("data: 0123456789\n\n" * 1000, 37, decoder)
    assert len(events) == 1000 and {e.data for e in events} == {"0123456789"}


def test_the_default_bound_is_generous():
    assert MAX_EVENT >= 4 * 1024 * 1024


LF_STREAM = (
    'data: {"a": 1}\n\n'
    "event: message_start\ndata: {\"b\": 2}\n\n"
    ": keep-alive\n\n"
    "data:no-space\n\n"
    "event: ping\n\n"
    "data: one\ndata: two\n\n\n\n"
    "event: delta\ndata: x\ndata: y\n\n"
    "id: 7\ndata: with id\n\n"
    "data: [DONE]\n\n"
)
LF_EVENTS = [SSEEvent(None, '{"a": 1}'), SSEEvent("message_start", '{"b": 2}'), SSEEvent(None, "no-space"),
             SSEEvent("ping", ""), SSEEvent(None, "one\ntwo"), SSEEvent("delta", "x\ny"), SSEEvent(None, "with id"),
             SSEEvent(None, "[DONE]")]


@pytest.mark.parametrize("size", [1, 2, 5, 13, 17, 64, len(LF_STREAM)])
def test_newline_only_streams_decode_the_same_whole_or_in_any_split(size):
    # Whole events in one read take the decoder's fast path; split ones the line-by-line path.
    assert feed(LF_STREAM, size) == LF_EVENTS


def test_an_event_begun_in_one_read_is_finished_by_the_next():
    decoder = SSEDecoder()
    assert decoder.decode("data: a\n") == []  # its blank line is still to come
    assert decoder.decode("\ndata: b\n\nevent: e\n") == [SSEEvent(None, "a"), SSEEvent(None, "b")]
    assert decoder.decode("data: c\n\n") == [SSEEvent("e", "c")]


def test_a_line_cut_between_reads_is_joined_and_the_rest_of_the_read_still_decoded():
    decoder = SSEDecoder()
    assert decoder.decode('data: {"a"') == []
    assert decoder.decode(': 1}\n\ndata: b\n\nevent: e\ndata: c\n\nda') == [
        SSEEvent(None, '{"a": 1}'), SSEEvent(None, "b"), SSEEvent("e", "c")]
    assert decoder.decode("ta: d\n\n") == [SSEEvent(None, "d")]
