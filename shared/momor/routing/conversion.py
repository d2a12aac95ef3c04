"""File processing (seed 000 `fileProcessing`): converting attached files before the model sees them.

A routing step between planning and the attempt loop (its result is the call's `adjust`). It never
changes which model answers: the plan is made as without it, and the conversions shape only what
each candidate is sent.

- `none`: files go as they are.
- `auto`: for each candidate, what its model cannot read (catalog `capabilities.input`) is
  converted: a PDF to its text (pdf-text), audio to a transcript (transcription), an image to a
  description by a model that reads images (image-description), a text file to inline text
  (plain-text); office documents (docx, xlsx, pptx), which no wire carries, always to their text;
  and a file given by URL that the candidate's wire takes only as bytes is fetched (routing/fetch.py).
- `directed`: `types` maps a media type, or a prefix ending in `*`, to a processor (processors.py)
  or a model's name; each matching file is converted for every candidate. A transcription model
  transcribes; a chat model is asked for the file's text (an image's description), a buffered call
  of its own.

A converted file leaves the message and its text joins the message's text (a user message's value,
a tool result's content), under a line naming the file. Each conversion is done once per call,
whichever candidates need it, and listed on the record with what it cost (conversions made through
a model keep their own attempts off the call's: they are not who answered). Local conversions run
off the event loop within limits (convert_limits.py); a file they refuse is a 4xx naming it.

Conversions are inside the call's budget (issue 33): before any provider is called, `planned` lists
every conversion some candidate may need, which is at most MOMOR_MAX_CONVERTED_FILES files (more: a
400), and `side_cost` is the most they may cost (each conversion through a model at its dearest
candidate's ceiling, estimate.py), which api/flow.py adds to the call's budget hold, so a call whose
conversions do not fit is a 402 before the first is made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..audio import Audio
from ..call import Call, Parameters
from ..catalog import Catalog
from ..config import get_config
from ..errors import RequestError, RoutingError
from ..messages import ContentMessage, File, ToolResultMessage, UserMessage, attached_files
from ..providers.registry import REGISTRY
from . import processors
from .attempts import Session
from .estimate import cost_ceiling
from .fetch import fetch_url, file_bytes
from .keys import KeyResolver
from .plan import Candidate, Needs, plan
from .recorder import Recorder
from .selectors import Prioritization, Selector
from .transcribe import transcribe

URL_MEDIA: dict[str, frozenset[str]] = {facts.name: facts.url_media for facts in REGISTRY}
"""What each wire can send by address (`url_media` in providers/registry.py); any other file given by
URL must be fetched for it (a wire not listed takes nothing by address)."""

EXTRACT_PROMPT = ("Write out the full text content of the attached file, exactly and completely, with no "
                  "commentary. For audio, write the transcript.")
DESCRIBE_PROMPT = ("Describe the attached image for a reader who cannot see it: what it shows, how it is laid out, "
                   "and any text in it, written out exactly. Give only the description, with no commentary.")
DESCRIBE_MAX_TOKENS = 2048
"""An image description's output ceiling: a description is a few paragraphs, and the budget holds a
conversion at its ceiling, so without one an image held the describing model's whole output maximum
(64k tokens on Claude: about $1 an image). Text extraction keeps the model's own ceiling (a document's
text may be long)."""


def conversion_call(file: File) -> Call:
    """The call that converts `file` through a model (an image described, anything else written out
    as text): made, and held against the budget, the same way."""
    if media_kind(file.content_type) == "image":
        return Call(system="", messages=[UserMessage(value=DESCRIBE_PROMPT, files=[file])],
                    params=Parameters(max_tokens=DESCRIBE_MAX_TOKENS))
    return Call(system="", messages=[UserMessage(value=EXTRACT_PROMPT, files=[file])])


def media_kind(content_type: str) -> str:
    content_type = content_type.split(";", 1)[0].strip().lower()
    if content_type.startswith("image/"):
        return "image"
    if content_type.startswith("audio/"):
        return "audio"
    return "pdf" if content_type == "application/pdf" else "text"


@dataclass(slots=True)
class Conversion:
    """One conversion, as the record lists it."""

    where: str
    name: str
    content_type: str
    to: str
    """text, transcript or bytes (a URL fetched)."""
    by: str
    """The processor, or the model that converted it."""
    provider: str | None = None
    cost: Decimal = Decimal(0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"where": self.where, "file": self.name, "contentType": self.content_type,
                               "to": self.to, "by": self.by, "cost": self.cost}
        if self.provider:
            out["provider"] = self.provider
        return out


@dataclass(slots=True)
class Converter:
    """Conversions of one call, each made at most once."""

    catalog: Catalog
    prio: Prioritization
    resolve_key: KeyResolver
    recorder: Recorder
    network_timeout: float | None = None
    done: dict[tuple[str, str], str | File] = field(default_factory=dict)
    screen: TextScreen | None = None
    """The caller's input guardrails on a file's converted text (api/file_processing.py), once per
    conversion: what the candidates are sent is the screened text."""
    unscreened: Callable[[File, str], None] | None = None
    """Called for each file a candidate is sent as it is (not converted): raises where the caller's
    guardrails refuse a file they cannot read."""

    async def convert(self, file: File, where: str, how: str) -> str | File:
        """`file` as text (a processor or model named `how`) or, for how == "fetch", as bytes."""
        key = (where, how)
        if key not in self.done:
            made = await self._convert(file, where, how)
            if isinstance(made, str) and self.screen is not None:
                made = await self.screen(made, file, where)
            self.done[key] = made
        return self.done[key]

    async def _convert(self, file: File, where: str, how: str) -> str | File:
        limit = get_config().max_file_bytes
        if how == "fetch":
            data, _ = await fetch_url(file.value, where, limit=limit)
            self._note(file, where, "bytes", "fetch")
            return File(type="bytes", value=_b64(data), name=file.name, contentType=file.content_type)
        if how in processors.LOCAL:
            data = await file_bytes(file.value, file.type, where, limit=limit)
            text = await processors.local_text(how, data, where, file.name)
            self._note(file, where, "text", how)
            return text
        if how == processors.TRANSCRIPTION:
            return await self._transcribed(file, where, None)
        if how == processors.IMAGE_DESCRIPTION:
            return await self._described(file, where)
        model = next((m for m in self.catalog.models if m.name.lower() == how.lower()), None)
        if model is None:
            raise RequestError(f"fileProcessing.types: {how!r} is neither a processor ({', '.join(processors.NAMES)}) "
                               "nor a model in the catalog.", param="fileProcessing.types")
        if model.kind == "transcription":
            return await self._transcribed(file, where, model.name)
        candidates = plan(self.catalog, [Selector(name=model.name)], self.prio)
        return await self._through_model(file, where, candidates)

    async def _transcribed(self, file: File, where: str, model: str | None) -> str:
        if media_kind(file.content_type) != "audio":
            raise RequestError(f"{where}: only audio can be transcribed, not {file.content_type!r}.", param=where)
        data = await file_bytes(file.value, file.type, where, limit=get_config().max_file_bytes)
        selectors = [Selector(name=model)] if model else [Selector()]
        candidates = plan(self.catalog, selectors, self.prio, kind="transcription")
        sub = self._sub_recorder()
        done = await transcribe(Audio(data, file.name, file.content_type), candidates, sub,
                                resolve_key=self.resolve_key, network_timeout=self.network_timeout)
        self._note(file, where, "transcript", done.candidate.model.name, done.candidate.provider.name, sub)
        return done.transcript.text

    def vision_candidates(self) -> list[Candidate]:
        """The chat offerings whose model reads images, as the caller's selectors-free `auto` would
        plan them (cheapest first, the caller's prioritization applied): who describes an image."""
        try:
            planned = plan(self.catalog, [Selector()], self.prio, Needs(media=frozenset({"image"})))
        except RoutingError:
            return []
        return [c for c in planned if "image" in c.model.capabilities.input]

    async def _described(self, file: File, where: str) -> str:
        if media_kind(file.content_type) != "image":
            raise RequestError(f"{where}: only images can be described, not {file.content_type!r}.", param=where)
        candidates = self.vision_candidates()
        if not candidates:
            raise RequestError(f"{where}: no model that reads images may describe {file.name!r} on this call.",
                               param=where)
        return await self._through_model(file, where, candidates)  # an image: described

    async def _through_model(self, file: File, where: str, candidates: list[Candidate]) -> str:
        call = conversion_call(file)
        sub = self._sub_recorder()

        async def fetched_for(call: Call, candidate: Candidate) -> Call:
            # The file by address to a wire that takes it only as bytes: fetched (once) for that one.
            if file.type != "url" or media_kind(file.content_type) in URL_MEDIA.get(candidate.provider.wire, ()):
                return call
            fetched = await self.convert(file, where, "fetch")
            assert isinstance(fetched, File)
            return dataclasses.replace(call, messages=conversion_call(fetched).messages)

        session = Session(call, candidates, sub, resolve_key=self.resolve_key, network_timeout=self.network_timeout,
                          adjust=fetched_for)
        answer = await session.open()
        async for _ in answer.events:
            pass
        text = "".join(m.value for m in answer.assembler.messages() if isinstance(m, ContentMessage))
        self._note(file, where, "text", answer.served.model.name, answer.served.provider.name, sub)
        return text

    def _sub_recorder(self) -> Recorder:
        return Recorder(self.recorder.request_id, self.recorder.route, self.recorder.dialect)

    def _note(self, file: File, where: str, to: str, by: str, provider: str | None = None,
              sub: Recorder | None = None) -> None:
        cost = Decimal(0)
        if sub is not None:
            self.recorder.secrets |= sub.secrets
            cost = sum((a.cost for a in sub.attempts if a.cost is not None), Decimal(0))
        self.recorder.conversions.append(Conversion(where, file.name, file.content_type, to, by, provider, cost))


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def directed_choice(content_type: str, types: dict[str, str]) -> str | None:
    """The processor or model `types` names for a media type: an exact entry, else the longest
    matching prefix ending in `*`."""
    media = content_type.split(";", 1)[0].strip().lower()
    exact = {k.lower(): v for k, v in types.items() if not k.endswith("*")}
    if media in exact:
        return exact[media]
    prefixes = sorted(((k[:-1].lower(), v) for k, v in types.items() if k.endswith("*")), key=lambda kv: -len(kv[0]))
    return next((v for prefix, v in prefixes if media.startswith(prefix)), None)


def auto_choice(file: File, candidate: Candidate) -> str | None:
    """What `auto` does with a file for one candidate: a processor, "fetch", or None (send as is)."""
    office = processors.OFFICE_TYPES.get(file.content_type.split(";", 1)[0].strip().lower())
    if office is not None:  # no wire carries an office document
        return office
    kind = media_kind(file.content_type)
    readable = set(candidate.model.capabilities.input)
    if kind == "text":  # no wire takes a text attachment; other binary types are left for the wire to refuse
        return processors.PLAIN_TEXT if _textual(file.content_type) else None
    if kind not in readable:
        return {"pdf": processors.PDF_TEXT, "audio": processors.TRANSCRIPTION,
                "image": processors.IMAGE_DESCRIPTION}.get(kind)
    if file.type == "url" and kind not in URL_MEDIA.get(candidate.provider.wire, frozenset()):
        return "fetch"
    return None


def _textual(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media.startswith("text/") or media.endswith(("/json", "+json", "/xml", "+xml", "/csv"))


Chooser = Callable[[File], "str | None"]
TextScreen = Callable[[str, File, str], Awaitable[str]]
"""(converted text, the file, its place) -> the text the candidates are sent."""


async def converted_messages(messages: list[Any], choose: Chooser, converter: Converter) -> list[Any]:
    """The messages with each file `choose` names a conversion for converted."""
    out = []
    for i, message in enumerate(messages):
        files = attached_files(message)
        if not files:
            out.append(message)
            continue
        kept: list[File] = []
        texts: list[str] = []
        for j, file in enumerate(files):
            how = choose(file)
            where = f"messages[{i}].{'files' if isinstance(message, UserMessage) else 'result.documents'}[{j}]"
            if how is None:
                if converter.unscreened is not None:
                    converter.unscreened(file, where)
                kept.append(file)
                continue
            result = await converter.convert(file, where, how)
            if isinstance(result, File):
                if converter.unscreened is not None:  # fetched, still sent as a file
                    converter.unscreened(file, where)
                kept.append(result)
            else:
                # An image's text is a model's account of it, and the reading model is told so.
                as_what = "as described by a model" if media_kind(file.content_type) == "image" else "as text"
                texts.append(f"--- {file.name} ({file.content_type}, {as_what}) ---\n{result}")
        out.append(_with_files(message, kept, texts))
    return out


def _with_files(message: Any, files: list[File], texts: list[str]) -> Any:
    if isinstance(message, UserMessage):
        value = "\n\n".join([message.value, *texts]) if message.value else "\n\n".join(texts)
        return message.model_copy(update={"files": files, "value": value})
    if isinstance(message, ToolResultMessage):
        result = message.result
        content = "\n\n".join([result.content, *texts]) if result.content else "\n\n".join(texts)
        return message.model_copy(update={"result": result.model_copy(update={"documents": files,
                                                                              "content": content})})
    return message


def _files(messages: list[Any]) -> list[tuple[str, File]]:
    """Every attached file with the name `converted_messages` gives its place."""
    out = []
    for i, message in enumerate(messages):
        kind = "files" if isinstance(message, UserMessage) else "result.documents"
        out += [(f"messages[{i}].{kind}[{j}]", file) for j, file in enumerate(attached_files(message))]
    return out


def planned(call: Call, mode: str, types: dict[str, str] | None, converter: Converter,
            candidates: list[Candidate]) -> dict[tuple[str, str], File]:
    """(where, how) -> file for every conversion some candidate of `candidates` may need, as `prepare`
    would choose them; each is made at most once whichever candidates need it."""
    files = _files(call.messages)
    if not files:
        return {}
    if mode == "directed":
        chosen = ((where, file, directed_choice(file.content_type, types or {})) for where, file in files)
        return {(where, how): file for where, file, how in chosen if how is not None}
    can_transcribe = any(m.kind == "transcription" and m.tier for m in converter.catalog.models)
    can_describe = bool(converter.vision_candidates())
    out: dict[tuple[str, str], File] = {}
    for candidate in candidates:
        for where, file in files:
            how = auto_choice(file, candidate)
            if how is None or (how == processors.TRANSCRIPTION and not can_transcribe) or (
                    how == processors.IMAGE_DESCRIPTION and not can_describe):
                continue
            out[(where, how)] = file
    return out


def check_count(conversions: dict[tuple[str, str], File]) -> None:
    """At most MOMOR_MAX_CONVERTED_FILES files converted for one call: each may be a model's call."""
    most = get_config().max_converted_files
    count = len({where for where, how in conversions if how != "fetch"})
    if count > most:
        raise RequestError(f"fileProcessing: this call would convert {count} files; a call may convert at most "
                           f"{most} (MOMOR_MAX_CONVERTED_FILES).", param="fileProcessing")


def side_cost(conversions: dict[tuple[str, str], File], converter: Converter) -> Decimal:
    """The most `conversions` may cost: those made through a model at the ceiling of the dearest
    offering that may make them (a local processor or a fetch costs nothing)."""
    total = Decimal(0)
    for (_, how), file in conversions.items():
        if how == "fetch" or how in processors.LOCAL:
            continue
        try:
            candidates = _converters_of(how, file, converter)
        except RequestError:  # refused when made, naming the file (no cost either way)
            continue
        total += cost_ceiling(conversion_call(file), candidates)
    return total


def hold(routed: Any, catalog: Catalog, candidates: list[Candidate]) -> Decimal:
    """`Routed.side_costs` for a call with file processing: the most its conversions may cost (a
    call converting more files than allowed is refused here, before its hold)."""
    processing = routed.processing
    if processing is None:
        return Decimal(0)
    converter = Converter(catalog, routed.prio, lambda candidate: "no key is used to plan", Recorder("", "", ""))
    conversions = planned(routed.call, processing.type, processing.types, converter, candidates)
    check_count(conversions)
    return side_cost(conversions, converter)


def _converters_of(how: str, file: File, converter: Converter) -> list[Candidate]:
    """The offerings that may make one conversion through a model (as `Converter._convert` plans it)."""
    if how == processors.IMAGE_DESCRIPTION:
        return converter.vision_candidates()
    model = None if how == processors.TRANSCRIPTION else \
        next((m for m in converter.catalog.models if m.name.lower() == how.lower()), None)
    if how == processors.TRANSCRIPTION or (model is not None and model.kind == "transcription"):
        selectors = [Selector(name=model.name)] if model is not None else [Selector()]
        return plan(converter.catalog, selectors, converter.prio, kind="transcription")
    if model is None:
        return []
    return plan(converter.catalog, [Selector(name=model.name)], converter.prio)


def offering_key(model: str, provider: str) -> str:
    return f"{model}@{provider}"


def prepare(call: Call, mode: str, types: dict[str, str] | None,
            converter: Converter) -> Callable[[Candidate], Awaitable[list[Any]]]:
    """How one candidate's messages are converted, as `mode` asks, made when that candidate is about
    to be tried: a conversion only a later candidate needs costs nothing when an earlier one serves.
    Each conversion is made at most once (the Converter keeps them)."""
    if mode == "directed":
        def directed(file: File) -> str | None:
            return directed_choice(file.content_type, types or {})

        async def for_any(candidate: Candidate) -> list[Any]:
            return await converted_messages(call.messages, directed, converter)

        return for_any
    # With no transcription model in the catalog, auto leaves audio as it is (the wire decides); the
    # same for images when no model the call may use reads them.
    can_transcribe = any(m.kind == "transcription" and m.tier for m in converter.catalog.models)
    can_describe = bool(converter.vision_candidates())

    async def for_candidate(candidate: Candidate) -> list[Any]:
        def choose(file: File) -> str | None:
            how = auto_choice(file, candidate)
            if (how == processors.TRANSCRIPTION and not can_transcribe) or (
                    how == processors.IMAGE_DESCRIPTION and not can_describe):
                return None
            return how

        return await converted_messages(call.messages, choose, converter)

    return for_candidate


def converting_adjust(original: list[Any], convert_for: Callable[[Candidate], Awaitable[list[Any]]],
                      then: Callable[[Call, Candidate], Call] | None = None
                      ) -> Callable[[Call, Candidate], Awaitable[Call]]:
    """The attempt loop's per-candidate adjustment (routing/request.py Routed.adjust), sending each
    candidate its converted messages after any adjustment already in force. Messages the loop added
    after the caller's (a rollover's prefill) are kept behind them."""

    async def adjust(call: Call, candidate: Candidate) -> Call:
        if then is not None:
            call = then(call, candidate)
        messages = await convert_for(candidate)
        return dataclasses.replace(call, messages=[*messages, *call.messages[len(original):]])

    return adjust
