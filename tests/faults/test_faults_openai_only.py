"""Fault injection through the OpenAI door (POST /v1/chat/completions) that only this dialect has.

What every door shares is tested once for all three in test_faults_routes.py (the OpenAI door's
reading of answers, chunks and error objects is tests/faults/doors/openai_chat.py). Here: what the
official SDK makes of an error chunk.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.fakes.script import cut

from .doors.base import TEXT

pytestmark = pytest.mark.emulators


@pytest.fixture
def client(momor) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def test_the_sdk_raises_on_the_error_chunk_and_nothing_else_is_asked(momor, fake, client):
    fake.script("flaky", cut(after=4))
    received = []
    with pytest.raises(openai.APIError, match="closed the connection"):
        for chunk in client.chat.completions.create(model="duo", messages=[{"role": "user", "content": TEXT}],
                                                    stream=True, max_tokens=100):
            received.append(chunk)
    assert received and fake.requests("backup") == []

