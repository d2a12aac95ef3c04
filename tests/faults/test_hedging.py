"""Hedging on a late first token (routing/hedge.py, issue 25), over HTTP through every door.

`duo`'s lead (flaky or backup, per door) is made slow to its first token with the fake's `hang`
(no byte, not even headers, for that long); MOMOR_HEDGE_AFTER_S makes "late" a fraction of a second,
so the fallback starts beside it, serves, and the slow attempt is cancelled: its connection to the
fake is closed (the fake sees the client leave), and the record keeps it, marked hedged, with what
its input may have cost. No test waits for the slow provider: a 20 s first token costs a second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.fakes import server as fake_server
from tests.fakes.script import cut, hang

from .doors import DOORS, Door
from .doors.base import ANSWER
from .support import MODES, SLACK, model_entry, record_of, write_variant

pytestmark = [pytest.mark.emulators, pytest.mark.timeout(120)]

HEDGE_AFTER = 0.3
"""MOMOR_HEDGE_AFTER_S here: how late a first token may be before the fallback starts beside it."""


@pytest.fixture(params=list(DOORS))
def door(request, momor) -> Iterator[Door]:
    adapter = DOORS[request.param](momor)
    yield adapter
    adapter.close()


@pytest.fixture
def left(monkeypatch) -> list[float]:
    """When the fake saw a client leave a request it was holding (a `hang` the client closed)."""
    seen: list[float] = []
    original = fake_server.pause

    async def pause(receive: Any, seconds: float) -> bool:
        gone = await original(receive, seconds)
        if gone:
            seen.append(time.monotonic())
        return gone

    monkeypatch.setattr(fake_server, "pause", pause)
    return seen


def wait_for(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


def hedged_record(momor: Any, request_id: str, loser: str, winner: str) -> dict[str, Any]:
    record = record_of(momor, request_id)
    rows = [(a["provider"], a["status"], a.get("hedged", False)) for a in record["attempts"]]
    assert sorted(rows) == sorted([(loser, "cancelled", True), (winner, "ok" if record["outcome"] == "complete"
                                                                        else "failed", False)]), rows
    lost = next(a for a in record["attempts"] if a["provider"] == loser)
    assert lost["error"].startswith(f"hedged: {winner}")
    assert lost["usage"]["inputTokens"] > 0 and float(lost["cost"]) > 0  # its input may be billed
    assert not lost["delivered"]
    return record


@MODES
def test_a_20_second_first_token_is_beaten_by_the_fallback(momor, fake, door, tune, left, streamed):
    tune(MOMOR_HEDGE_AFTER_S=HEDGE_AFTER)
    fake.script(door.lead, hang(20))
    started = time.monotonic()
    out = door.call(streamed)
    assert out.provider() == door.other and out.text() == ANSWER
    assert out.seconds < HEDGE_AFTER + SLACK  # not the 20 s, nor the first-token timeout
    assert wait_for(lambda: len(left) == 1)  # the cancellation reached the slow provider's connection
    assert left[0] - started < HEDGE_AFTER + SLACK
    assert len(fake.requests(door.lead)) == len(fake.requests(door.other)) == 1
    hedged_record(momor, out.request_id, door.lead, door.other)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "buffered"])
def test_a_loser_that_would_answer_after_the_winner_is_cut_off(momor, fake, tune, left, streamed):
    """The lead is late but answers 0.8 s in; the fallback, started at 0.3 s, answers at once and
    wins. The lead's answer never reaches the caller: its request was closed before it came."""
    tune(MOMOR_HEDGE_AFTER_S=HEDGE_AFTER)
    door = DOORS["native"](momor)
    fake.script("flaky", hang(0.8))
    out = door.call(streamed)
    assert out.provider() == "backup" and out.text() == ANSWER
    time.sleep(1.0)  # past the moment the lead would have answered
    assert len(left) == 1
    assert fake.requests("flaky")[0].status is None  # the fake never answered it
    hedged_record(momor, out.request_id, "flaky", "backup")


def test_the_late_lead_wins_when_it_answers_first_and_the_fallback_is_cancelled(momor, fake, tune, left):
    tune(MOMOR_HEDGE_AFTER_S=HEDGE_AFTER)
    door = DOORS["native"](momor)
    fake.script("flaky", hang(0.6))
    fake.script("backup", hang(20))
    out = door.call(True)
    assert out.provider() == "flaky" and out.text() == ANSWER
    assert out.seconds < 0.6 + SLACK
    assert wait_for(lambda: len(left) == 1)
    hedged_record(momor, out.request_id, "backup", "flaky")


@pytest.mark.parametrize("name", ["native", "openai"])
def test_a_winner_that_fails_after_its_first_token_ends_the_stream(momor, fake, tune, left, name):
    """The fallback wins, then its stream is cut: the stream ends with the dialect's error (nothing
    left to roll over to) and the lead, cancelled, is not taken up again."""
    tune(MOMOR_HEDGE_AFTER_S=HEDGE_AFTER)
    door = DOORS[name](momor)
    fake.script("flaky", hang(20))
    fake.script("backup", cut(after=6))  # inside the text: after its first token
    out = door.call(True)
    out.broken()
    assert wait_for(lambda: len(left) == 1)
    assert len(fake.requests("flaky")) == 1 and len(fake.requests("backup")) == 1
    record = hedged_record(momor, out.request_id, "flaky", "backup")
    assert record["outcome"] == "failed"
    assert next(a for a in record["attempts"] if a["provider"] == "backup")["delivered"]


# --- off: per call in every dialect, per model in the catalog ------------------------------------------

OFF = {
    "native": ("/models", {"systemPrompt": "", "messages": [{"type": "user", "value": "hi"}], "model": "duo",
                           "prioritization": {"hedge": False}}),
    "openai": ("/v1/chat/completions", {"model": "momor/duo", "messages": [{"role": "user", "content": "hi"}],
                                        "provider": {"hedge": False}}),
    "anthropic": ("/messages", {"model": "momor/duo", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}],
                                "provider": {"hedge": False}}),
}


def post(momor: Any, path: str, body: dict[str, Any]) -> httpx2.Response:
    return momor.post(path, body, timeout=30)


@pytest.mark.parametrize("name", list(OFF))
def test_hedging_is_off_for_a_call_that_says_so(momor, fake, tune, name):
    tune(MOMOR_HEDGE_AFTER_S=HEDGE_AFTER)
    path, body = OFF[name]
    lead = "backup" if name == "anthropic" else "flaky"
    fake.script("flaky", hang(1.0))
    fake.script("backup", hang(1.0))
    response = post(momor, path, body)
    assert response.status_code == 200, response.text
    assert len(fake.requests()) == 1 and fake.requests()[0].label in ("flaky", "backup")
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [(fake.requests()[0].label, "ok")]
    del lead


@pytest.mark.parametrize("name", list(OFF))
def test_a_hedge_field_that_cannot_be_read_is_a_400(momor, name):
    path, body = OFF[name]
    where = "prioritization" if name == "native" else "provider"
    response = post(momor, path, {**body, where: {"hedge": "no"}})
    assert response.status_code == 400, response.text
    assert f"{where}.hedge" in response.text


def test_hedging_is_off_for_a_model_the_catalog_says_so(momor, fake, tune):
    tune(MOMOR_HEDGE_AFTER_S=HEDGE_AFTER)
    write_variant(momor, lambda c: model_entry(c, "duo").update(hedge=False))
    fake.script("flaky", hang(1.0))
    out = DOORS["native"](momor).call(True)
    assert out.provider() == "flaky" and out.seconds >= 1.0
    assert [r.label for r in fake.requests()] == ["flaky"]


def test_hedging_is_on_by_default_and_two_calls_at_once_each_hedge_their_own(momor, fake, tune, left):
    tune(MOMOR_HEDGE_AFTER_S=HEDGE_AFTER)
    fake.script("flaky", hang(20), hang(20))
    outs: list[Any] = []
    threads = [threading.Thread(target=lambda: outs.append(DOORS["native"](momor).call(True))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [o.provider() for o in outs] == ["backup", "backup"]
    assert wait_for(lambda: len(left) == 2)
