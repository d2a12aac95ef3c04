"""The Anthropic door (POST /v1/messages): buffered through the official SDK, streams read raw.

Here `backup` leads unless the call names another (the Anthropic wire: its own events pass
through) and `flaky` is its failover (translated). Who served is read from the cache token header.
"""

from __future__ import annotations

from typing import Any

import anthropic

from momor.routing.affinity import read_cache_token

from .base import TEXT, Door, Outcome

PATH = "/v1/messages"
USER = [{"role": "user", "content": TEXT}]


def routing(lead: str, models: list[str] | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"provider": {"order": [lead]}}
    if models is not None:
        extra["models"] = models
    return extra


def _whole(body: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's error answer is the error object's envelope itself ({"type": "error", "error": ...})."""
    return body


class AnthropicOutcome(Outcome):
    def __init__(self, client: anthropic.Anthropic, momor: Any, streamed: bool, lead: str,
                 models: list[str] | None) -> None:
        self.streamed = streamed
        self.message: Any = None
        model, fallbacks = (models[0], models[1:]) if models else ("duo", None)
        if streamed:
            body = {"model": model, "max_tokens": 100, "messages": USER, "stream": True,
                    **routing(lead, fallbacks)}
            self._stream_raw(momor, PATH, body, _whole)
        else:
            self.message = self._call_sdk(
                lambda: client.messages.with_raw_response.create(
                    model=model, max_tokens=100, messages=USER, extra_body=routing(lead, fallbacks)),
                anthropic.APIStatusError, _whole)
        self.request_id = self.headers["x-momor-request-id"]

    def _served(self) -> tuple[str, str]:
        """(model id in the answer, provider the cache token names); a stream must also end well."""
        assert self.status == 200, self.error
        named = read_cache_token(self.headers["x-momor-cache-token"])
        assert named is not None and self.headers["x-momor-overflow-step"] == "off"
        if not self.streamed:
            assert self.message.id == self.request_id and self.headers["request-id"] == self.request_id
            return self.message.model, named[1]
        events = [event for event, _ in self.frames]
        assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"], events
        start = self.frames[0][1]["message"]
        assert start["id"] == self.request_id
        return start["model"], named[1]

    def served(self) -> str:
        return self._served()[0]

    def provider(self) -> str:
        return self._served()[1]

    def text(self) -> str:
        if not self.streamed:
            return "".join(block.text for block in self.message.content if block.type == "text")
        return "".join(d["delta"].get("text", "") for e, d in self.frames if e == "content_block_delta")

    def refusal(self, status: int) -> tuple[str, str]:
        """Anthropic's error body, naming the request."""
        assert self.status == status and self.error is not None, self.error
        assert self.error["type"] == "error" and self.error["request_id"] == self.request_id
        return self.error["error"]["message"], self.error["error"]["type"]

    def broken(self) -> str:
        """One `error` event, last, of type api_error, and no message_stop."""
        assert self.status == 200
        events = [event for event, _ in self.frames]
        assert events[0] == "message_start" and events[-1] == "error" and events.count("error") == 1, events
        assert "message_stop" not in events
        data = self.frames[-1][1]
        assert data["type"] == "error" and data["error"]["type"] == "api_error" and data["error"]["message"]
        return data["error"]["message"]

    def finish_reason(self) -> str:
        self._served()
        return self.frames[-2][1]["delta"]["stop_reason"]

    def usage(self) -> tuple[int, None]:
        if not self.streamed:
            return self.message.usage.output_tokens, None
        return self.frames[-2][1]["usage"]["output_tokens"], None

    def body_text(self) -> str:
        return self.message.model_dump_json()


class AnthropicDoor(Door):
    name = "anthropic"
    lead = "backup"
    stop = "end_turn"
    kinds = {400: "invalid_request_error", 429: "rate_limit_error", 502: "api_error"}
    sdk_errors = {400: anthropic.BadRequestError, 429: anthropic.RateLimitError, 502: anthropic.InternalServerError}

    def __init__(self, momor: Any) -> None:
        super().__init__(momor)
        self.client = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)

    def call(self, streamed: bool, lead: str | None = None, models: list[str] | None = None) -> AnthropicOutcome:
        return AnthropicOutcome(self.client, self.momor, streamed, lead or self.lead, models)

    def close(self) -> None:
        self.client.close()
