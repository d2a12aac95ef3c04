"""The OpenAI door (POST /v1/chat/completions): buffered through the official SDK, streams read raw.

Buffered calls go through `with_raw_response` (for the headers); streams are read raw, to see every
chunk and the absence of [DONE], and each answer chunk is also validated as the SDK's own chunk type.
"""

from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletionChunk

from ..support import record_of
from .base import TEXT, Door, Outcome

PATH = "/v1/chat/completions"
USER = [{"role": "user", "content": TEXT}]


def routing(lead: str | None, models: list[str] | None) -> dict[str, Any]:
    """The OpenRouter-style fields: a provider order and fallback models after the first."""
    extra: dict[str, Any] = {}
    if lead is not None:
        extra["provider"] = {"order": [lead]}
    if models is not None:
        extra["models"] = models
    return extra


def openai_error(body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's error object, inside its envelope."""
    return body["error"]


class OpenAIOutcome(Outcome):
    def __init__(self, momor: Any, client: openai.OpenAI, streamed: bool, lead: str | None,
                 models: list[str] | None) -> None:
        self.momor = momor
        self.streamed = streamed
        self.completion: Any = None
        model, fallbacks = (models[0], models[1:]) if models else ("duo", None)
        if streamed:
            body = {"model": model, "messages": USER, "stream": True, "max_tokens": 100, **routing(lead, fallbacks)}
            self._stream_raw(momor, PATH, body, openai_error)
        else:
            self.completion = self._call_sdk(
                lambda: client.chat.completions.with_raw_response.create(
                    model=model, messages=USER, max_tokens=100, extra_body=routing(lead, fallbacks)),
                openai.APIStatusError, openai_error)
        self.request_id = self.headers["x-momor-request-id"]

    @property
    def chunks(self) -> list[Any]:
        assert self.stream is not None
        return self.stream.datas

    def served(self) -> str:
        """The `model` the caller was told; a stream must end with one finish "stop", then [DONE]."""
        assert self.status == 200, self.error
        if not self.streamed:
            assert self.completion.id == self.request_id
            return self.completion.model
        assert self.chunks[-1] == "[DONE]"
        finishes = [c["choices"][0]["finish_reason"] for c in self.chunks[:-1] if c["choices"]]
        assert [f for f in finishes if f] == ["stop"]
        models = {c["model"] for c in self.chunks[:-1]}
        assert len(models) == 1 and self.headers["x-momor-model"] in models
        return models.pop()

    def provider(self) -> str:
        """Who served, from the stream's header or (buffered: the body does not say) the record."""
        if self.streamed:
            return self.headers["x-momor-provider"]
        return record_of(self.momor, self.request_id)["served"]["provider"]

    def text(self) -> str:
        if not self.streamed:
            return self.completion.choices[0].message.content
        # Every chunk but the error one (finish_reason "error", OpenRouter's, outside the SDK's
        # literal; broken() reads it) must be a ChatCompletionChunk as the SDK types it.
        parsed = [ChatCompletionChunk.model_validate(c) for c in self.chunks if c != "[DONE]" and "error" not in c]
        return "".join(c.choices[0].delta.content or "" for c in parsed if c.choices)

    def refusal(self, status: int) -> tuple[str, str]:
        """OpenAI's error object, with exactly its four fields."""
        assert self.status == status and self.error is not None, self.error
        assert set(self.error) == {"message", "type", "param", "code"}
        return self.error["message"], self.error["type"]

    def broken(self) -> str:
        """One error chunk, last, with finish_reason "error", and no [DONE]."""
        assert self.status == 200
        assert "[DONE]" not in self.chunks
        with_error = [c for c in self.chunks if "error" in c]
        assert len(with_error) == 1 and with_error[0] is self.chunks[-1]
        last = self.chunks[-1]
        assert last["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
        assert last["id"] == self.request_id and last["error"]["code"] == 502 and last["error"]["message"]
        return last["error"]["message"]

    def finish_reason(self) -> str:
        self.served()
        return next(c["choices"][0]["finish_reason"] for c in self.chunks[:-1]
                    if c["choices"] and c["choices"][0]["finish_reason"])

    def usage(self) -> tuple[int | None, None]:
        """A buffered completion's usage; a stream has none unless asked (stream_options)."""
        if self.streamed:
            reported = [c["usage"]["completion_tokens"] for c in self.chunks if c != "[DONE]" and c.get("usage")]
            return (reported[-1] if reported else None), None
        return self.completion.usage.completion_tokens, None

    def body_text(self) -> str:
        return self.completion.model_dump_json()


class OpenAIDoor(Door):
    name = "openai"
    lead = "flaky"
    stop = "stop"
    kinds = {400: "invalid_request_error", 429: "requests", 502: "server_error"}
    sdk_errors = {400: openai.BadRequestError, 429: openai.RateLimitError, 502: openai.InternalServerError}
    usage_in_stream = False

    def __init__(self, momor: Any) -> None:
        super().__init__(momor)
        self.client = openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)

    def call(self, streamed: bool, lead: str | None = None, models: list[str] | None = None) -> OpenAIOutcome:
        return OpenAIOutcome(self.momor, self.client, streamed, lead, models)

    def close(self) -> None:
        self.client.close()
