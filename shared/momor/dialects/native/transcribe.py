"""POST /models/transcribe (seed 000): an audio file to text, served by transcription models.

Body: {"file": File, "model"?, "models"?, "prioritization"?, "keys"?, "language"?, "prompt"?}: the
native File shape (a URL or base64 bytes, with name and contentType) and limits, and the native
route's selectors, prioritization and keys. Answer: {"type": "transcript", "text", "language"?,
"durationSeconds"?, "model": {name, tier, publisher, provider}, "usage"}. Refusals are problem
documents naming the field; authentication, rate limits, planning and the record are flow.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.flow import Prepared, routed_call
from ...audio import Audio
from ...call import Call
from ...catalog import Catalog
from ...config import describe_bytes, get_config
from ...door_http import LARGE_FILES_BY_URL, json_response
from ...errors import RequestError
from ...messages import File, UserMessage
from ...routing.fetch import file_bytes
from ...routing.plan import Needs
from ...routing.request import Routed
from ...routing.selectors import parse_prioritization, parse_selectors
from ...routing.transcribe import transcribe
from .parse import read_given, validated, written_selectors
from .route import NativeDoor
from .write import model_block

PATH = "/models/transcribe"
AUDIO_TYPES = ("audio/",)
"""Media types a transcription takes (OpenAI's API reads flac, mp3, mp4, mpeg, m4a, ogg, wav, webm)."""


class TranscribeBody(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    file: File
    model: str | dict[str, Any] | None = None
    models: list[str | dict[str, Any]] | None = None
    prioritization: dict[str, Any] | None = None
    keys: dict[str, str | dict[str, Any]] = Field(default_factory=dict)
    language: str | None = Field(None, min_length=1, max_length=32)
    prompt: str | None = None


@dataclass(slots=True, frozen=True)
class Job:
    file: File
    language: str | None
    prompt: str | None


def parse(raw: dict[str, Any]) -> Routed:
    return read_given(_parse, raw)  # null means "not given", as on POST /models


def _parse(raw: dict[str, Any]) -> Routed:
    body = validated(TranscribeBody, raw)
    if not body.file.content_type.lower().startswith(AUDIO_TYPES):
        raise RequestError(f"file.contentType: {body.file.content_type!r} is not audio; a transcription takes an "
                           "audio file (audio/*).", param="file.contentType")
    if body.file.type == "bytes":  # checked before any provider is planned; a URL is checked as it is fetched
        limit = get_config().max_inline_file_bytes
        if len(body.file.value) * 3 // 4 > limit + 2:  # exact once decoded (routing/fetch.py file_bytes)
            raise RequestError(f"file: the file {body.file.name!r} is larger than {describe_bytes(limit)}, the most "
                               f"a file may be inline. {LARGE_FILES_BY_URL}", status=413, param="file")
    return Routed(
        call=Call(system="", messages=[UserMessage(files=[body.file])]),
        selectors=parse_selectors(body.model, body.models),
        prio=parse_prioritization(body.prioritization),
        keys=body.keys,
        needs=Needs(media=frozenset({"audio"})),
        written_selectors=written_selectors(raw),
        kind="transcription",
        reply=Job(body.file, body.language, body.prompt),
    )


class TranscribeDoor(NativeDoor):
    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return parse(body)


async def _transcribe(p: Prepared) -> Response:
    job: Job = p.routed.reply
    data = await file_bytes(job.file.value, job.file.type, "file", limit=get_config().max_file_bytes)
    audio = Audio(data, job.file.name, job.file.content_type)
    done = await transcribe(audio, p.candidates, p.recorder, resolve_key=p.resolve_key, language=job.language,
                            prompt=job.prompt, network_timeout=p.routed.network_timeout, deadline=p.deadline)
    p.recorder.status_code = 200
    p.recorder.end("complete")
    answer: dict[str, Any] = {"type": "transcript", "text": done.transcript.text}
    language = done.transcript.language or job.language
    if language:
        answer["language"] = language
    if done.duration_seconds is not None:
        answer["durationSeconds"] = round(done.duration_seconds, 3)
    answer["model"] = model_block(done.candidate)
    answer["usage"] = done.transcript.usage.to_native(done.candidate.provider.name)
    return json_response(answer)


def routes(backend: Backend) -> list[Route]:
    door = TranscribeDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=PATH, operation=_transcribe)

    return [Route(PATH, create, methods=["POST"])]
