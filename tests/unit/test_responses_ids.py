"""The Responses dialect's ids and the reasoning state it hands the caller (dialects/responses/ids.py)."""

from __future__ import annotations

from momor.dialects.responses import ids

REQUEST = "0123456789abcdef0123456789abcdef"


def test_an_item_id_names_its_response_and_no_other_id_does():
    item = ids.item_id("msg", REQUEST, "o", 3)
    assert ids.response_of_item(item) == ids.response_id(REQUEST) == f"resp_{REQUEST}"
    assert ids.request_of(ids.response_id(REQUEST)) == REQUEST
    for foreign in ("msg_67ccd3a9da748190baa7f1570fe91ac6", "rs_abc", f"msg_{REQUEST}", f"msg_{REQUEST}_x1", ""):
        assert ids.response_of_item(foreign) is None
    assert ids.request_of("resp_" + "g" * 32) is None and ids.request_of("resp_" + REQUEST + "0") is None


def test_state_round_trips_and_anything_else_is_not_momors():
    state = {"wire": "anthropic", "signature": "c2lnbmVk+/=="}
    written = ids.encode_state(state)
    assert written.startswith(ids.STATE_PREFIX) and ids.decode_state(written) == state
    assert ids.decode_state("gAAAAABo-openai-encrypted") is None  # OpenAI's own encrypted content
    assert ids.decode_state(ids.STATE_PREFIX + "!!!") is None  # damaged
    assert ids.decode_state(ids.encode_state({"signature": "x"})) is None  # no wire named: not state
