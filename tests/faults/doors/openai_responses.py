"""The Responses door (POST /v1/responses, issue 24): buffered through the official SDK, streams read
raw, every event also validated as the SDK's own stream event type."""

from __future__ import annotations

from typing import Any

import openai
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from .base import TEXT, Door, Outcome
from .openai_chat import openai_error, routing

PATH = "/v1/responses"
_EVENT = TypeAdapter(ResponseStreamEvent)


class ResponsesOutcome(Outcome):
    def __init__(self, momor: Any, client: openai.OpenAI, streamed: bool, lead: str | None,
                 models: list[str] | None) -> None:
        self.momor = momor
        self.streamed = streamed
        self.response: Any = None
        model, fallbacks = (models[0], models[1:]) if models else ("duo", None)
        if streamed:
            body = {"model": model, "input": TEXT, "stream": True, "max_output_tokens": 100,
                    **routing(lead, fallbacks)}
            self._stream_raw(momor, PATH, body, openai_error)
        else:
            self.response = self._call_sdk(
                lambda: client.responses.with_raw_response.create(
                    model=model, input=TEXT, max_output_tokens=100, extra_body=routing(lead, fallbacks)),
                openai.APIStatusError, openai_error)
        self.request_id = self.headers["x-momor-request-id"]

    @property
    def events(self) -> list[Any]:
        assert self.stream is not None
        return [_EVENT.validate_python(d) for d in self.stream.datas]  # each as the SDK types it

    def served(self) -> str:
        """The `model` the caller was told; a stream must end on one response.completed."""
        assert self.status == 200, self.error
        if not self.streamed:
            assert self.response.id == f"resp_{self.request_id}"
            return self.response.model
        events = self.events
        assert events[-1].type == "response.completed"
        assert [e.sequence_number for e in events] == list(range(len(events)))
        models = {e.response.model for e in events if e.type.startswith("response.") and hasattr(e, "response")}
        assert len(models) == 1 and self.headers["x-momor-model"] in models
        return models.pop()

    def provider(self) -> str:
        """X-Momor-Provider, which this route sends on whole answers too; the record agrees."""
        if not self.streamed:
            assert self.headers["x-momor-model"] == self.response.model
        return self.headers["x-momor-provider"]

    def text(self) -> str:
        if not self.streamed:
            return self.response.output_text
        return "".join(e.delta for e in self.events if e.type == "response.output_text.delta")

    def refusal(self, status: int) -> tuple[str, str]:
        """OpenAI's error object, with exactly its four fields."""
        assert self.status == status and self.error is not None, self.error
        assert set(self.error) == {"message", "type", "param", "code"}
        return self.error["message"], self.error["type"]

    def broken(self) -> str:
        """One response.failed, last, carrying the error; no response.completed."""
        assert self.status == 200
        events = self.events
        assert events[-1].type == "response.failed"
        assert not [e for e in events if e.type in ("response.completed", "response.incomplete")]
        assert events[-1].response.id == f"resp_{self.request_id}" and events[-1].response.status == "failed"
        return events[-1].response.error.message

    def finish_reason(self) -> str:
        self.served()
        return self.events[-1].response.status

    def usage(self) -> tuple[int | None, None]:
        if self.streamed:
            final = self.events[-1]
            return (final.response.usage.output_tokens if final.type == "response.completed" else None), None
        return self.response.usage.output_tokens, None

    def body_text(self) -> str:
        return self.response.model_dump_json()


class ResponsesDoor(Door):
    name = "responses"
    lead = "flaky"
    stop = "completed"
    kinds = {400: "invalid_request_error", 429: "requests", 502: "server_error"}
    sdk_errors = {400: openai.BadRequestError, 429: openai.RateLimitError, 502: openai.InternalServerError}

    def __init__(self, momor: Any) -> None:
        super().__init__(momor)
        self.client = openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)

    def call(self, streamed: bool, lead: str | None = None, models: list[str] | None = None) -> ResponsesOutcome:
        return ResponsesOutcome(self.momor, self.client, streamed, lead, models)

    def close(self) -> None:
        self.client.close()
