"""The NDJSON framer: lines split across chunks, CRLF, blank lines, a last unterminated line, the
line bound; and, with the Puter decoder behind it, a malformed line and a cut stream."""

from __future__ import annotations

import pytest

from momor.errors import ProviderError
from momor.providers.ndjson import NDJSONDecoder
from momor.providers.puter import WIRE


def lines(decoder: NDJSONDecoder, *chunks: str) -> list[str]:
    out = [e.data for chunk in chunks for e in decoder.decode(chunk)]
    return out + [e.data for e in decoder.flush()]


def test_lines_split_across_chunks_come_whole():
    assert lines(NDJSONDecoder(), '{"a":', '1}\n{"b"', ':2}\n') == ['{"a":1}', '{"b":2}']


def test_crlf_and_blank_lines():
    assert lines(NDJSONDecoder(), '{"a":1}\r\n\r\n', '\n{"b":2}\r', '\n') == ['{"a":1}', '{"b":2}']


def test_a_crlf_split_between_chunks():
    decoder = NDJSONDecoder()
    assert [e.data for e in decoder.decode('{"a":1}\r')] == []
    assert [e.data for e in decoder.decode('\n')] == ['{"a":1}']


def test_a_last_line_without_newline_is_flushed():
    assert lines(NDJSONDecoder(), '{"a":1}\n{"b":2}') == ['{"a":1}', '{"b":2}']


def test_events_carry_no_name():
    assert NDJSONDecoder().decode('{"a":1}\n')[0].event is None


def test_an_oversized_line_is_a_protocol_error_before_it_is_whole():
    decoder = NDJSONDecoder(max_line=16)
    decoder.decode('{"a":"0123456')
    with pytest.raises(ProviderError) as failed:
        decoder.decode("789abcdef")  # no newline yet: the buffer alone is past the bound
    assert failed.value.kind == "protocol"


def test_an_oversized_complete_line_is_a_protocol_error():
    with pytest.raises(ProviderError):
        NDJSONDecoder(max_line=8).decode('{"a":"0123456789"}\n')


def test_a_line_at_the_bound_is_taken():
    assert lines(NDJSONDecoder(max_line=7), '{"a":1}\n') == ['{"a":1}']


def _feed_all(*chunks: str) -> list[object]:
    framer, decoder = NDJSONDecoder(), WIRE.stream_decoder(None)  # type: ignore[arg-type]
    events: list[object] = []
    for chunk in chunks:
        for item in framer.decode(chunk):
            events.extend(decoder.feed(item))
    for item in framer.flush():
        events.extend(decoder.feed(item))
    events.extend(decoder.close())
    return events


def test_a_malformed_line_is_a_protocol_error():
    with pytest.raises(ProviderError) as failed:
        _feed_all('{"type":"text","text":"Hi"}\n', '{"type":"text","te\n', '{"type":"usage","usage":{}}\n')
    assert failed.value.kind == "protocol"


def test_a_line_that_is_not_an_object_is_a_protocol_error():
    with pytest.raises(ProviderError) as failed:
        _feed_all('["text"]\n{"type":"usage","usage":{}}\n')
    assert failed.value.kind == "protocol"


def test_a_stream_cut_before_its_usage_line_is_an_error_never_a_finish():
    with pytest.raises(ProviderError) as failed:
        _feed_all('{"type":"text","text":"Hi"}\n{"type":"text","text":" there"}\n')
    assert failed.value.kind == "protocol" and "cut" in failed.value.detail


def test_a_stream_cut_mid_line_is_an_error():
    with pytest.raises(ProviderError):
        _feed_all('{"type":"text","text":"Hi"}\n{"type":"usa')
