"""Fake model providers that speak the real wires (OpenAI Chat Completions, in each compatible
provider's dialect by label: dialects.py; OpenAI Responses; Anthropic Messages; Puter's driver call)
byte for byte and refuse what the real APIs refuse, so a translation bug in Momor fails a test.

    with FakeProviders() as fake:
        fake.script("openai", fail(429, headers={"retry-after": "1"}), reply("hi"))
        base_url = fake.url + "/openai/v1"       # OpenAI wires (/chat/completions, /responses);
                                                 # Anthropic wire: fake.url + "/anthropic"

Out of process: `python -m tests.fakes --port 8788`, scripted over `/_fake/*` (see server.py).
"""

from .anthropic import redacted_thinking_data
from .runner import FakeProviders
from .script import (
    Cut,
    Fail,
    FakeState,
    Hang,
    Malformed,
    RecordedRequest,
    Reply,
    Stall,
    Step,
    cut,
    fail,
    hang,
    malformed,
    reply,
    stall,
)
from .server import create_app

__all__ = [
    "Cut", "Fail", "FakeProviders", "FakeState", "Hang", "Malformed", "RecordedRequest", "Reply", "Stall",
    "Step", "create_app", "cut", "fail", "hang", "malformed", "redacted_thinking_data", "reply", "stall",
]
