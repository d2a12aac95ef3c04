"""The canonical stream of events, and the parts manager that assembles them into a turn.

Every wire module turns its provider's answer (buffered or streamed) into these events; every
dialect writes them out. The buffered answer is built by `Assembler` from the same events a
stream carries, so a streamed answer and a buffered one cannot disagree.

A part is one output message (content, thinking or toolCall) at a vendor-neutral `index` chosen
by the wire. Order of events for one part: `PartStart`, any number of `Delta`, `PartEnd`.
Parts may interleave (parallel tool calls). `Usage` may come more than once (Anthropic sends input
tokens at the start and output tokens at the end); later non-None values win. `Finish` comes last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .messages import ContentMessage, ThinkingMessage, ToolCallBody, ToolCallMessage

PartKind = Literal["content", "thinking", "toolCall"]
Stop = Literal["stop", "length", "tool_calls", "content_filter", "stop_sequence", "refusal", "other"]
"""Why a turn ended, in Momor's words; each dialect maps it to its own (the raw reason is kept too)."""


@dataclass(slots=True, frozen=True)
class PartStart:
    index: int
    kind: PartKind
    tool_id: str | None = None
    """For toolCall: the provider's call id."""
    tool_name: str | None = None
    """For toolCall: the tool's name."""
    choice: int = 0
    """Which answer the part belongs to when the call asked for several (`Call.n`); the
    canonical turn is answer 0, and the others are written only by a dialect that has choices."""


@dataclass(slots=True)  # not frozen: a frozen __init__ costs three times a plain one, paid per token
class Delta:
    index: int
    text: str
    """Text for content and thinking; a fragment of the JSON arguments for toolCall."""


@dataclass(slots=True, frozen=True)
class PartEnd:
    index: int
    data: dict[str, Any] | None = None
    """Provider state for the finished part (a thinking signature, say), tagged with its wire."""


@dataclass(slots=True)
class Usage:
    """Tokens as the provider reported them. input_tokens counts all input, cache reads and
    writes included (as Chat Completions' prompt_tokens does), so cost is computed one way."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    """The part of cache_write_tokens written to be kept one hour (Anthropic's
    `cache_creation.ephemeral_1h_input_tokens`), priced apart; the rest is a five-minute write."""
    thought_tokens: int | None = None
    """Reasoning tokens counted apart from output (Gemini's thoughts)."""
    reasoning_tokens: int | None = None
    """The part of output_tokens spent reasoning (OpenAI's reasoning_tokens)."""
    estimated: bool = False
    """Set by the recorder when the provider reported no usage and Momor estimated it (tokens.py);
    never by a wire, so a provider's count and Momor's guess cannot be mistaken for each other."""

    def merge(self, other: Usage) -> None:
        for name in COUNTS:
            value = getattr(other, name)
            if value is not None:
                setattr(self, name, value)

    def plus(self, other: Usage) -> Usage:
        """Both usages summed, field by field (None where neither has a value): what two
        attempts that each produced part of one answer were billed together."""
        out = Usage(estimated=self.estimated or other.estimated)
        for name in COUNTS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None or theirs is not None:
                setattr(out, name, (mine or 0) + (theirs or 0))
        return out

    @property
    def known(self) -> bool:
        """Whether the provider reported both input and output tokens."""
        return self.input_tokens is not None and self.output_tokens is not None

    def to_native(self, provider: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": provider,
            "inputTokens": self.input_tokens or 0,
            "outputTokens": self.output_tokens or 0,
            "cacheReadTokens": self.cache_read_tokens or 0,
            "cacheWriteTokens": self.cache_write_tokens or 0,
        }
        if self.cache_write_1h_tokens:  # only when there are some: most calls write no hour-long cache
            out["cacheWrite1hTokens"] = self.cache_write_1h_tokens
        if self.thought_tokens is not None:
            out["thoughtTokens"] = self.thought_tokens
        if self.reasoning_tokens is not None:
            out["reasoningTokens"] = self.reasoning_tokens
        if self.estimated:
            out["estimated"] = True
        return out


COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens",
          "thought_tokens", "reasoning_tokens")


@dataclass(slots=True, frozen=True)
class UsageEvent:
    usage: Usage


@dataclass(slots=True, frozen=True)
class Finish:
    reason: str
    """The provider's own reason, as it gave it."""
    stop: Stop
    """The same reason in Momor's words."""
    fingerprint: str | None = None
    """The provider's id for the backend that served the turn."""
    others: tuple[ChoiceEnd, ...] = ()
    """How each answer after the first ended, when the call asked for several (`Call.n`)."""


@dataclass(slots=True, frozen=True)
class ChoiceEnd:
    """Why one answer other than the first ended (see `Finish.others`)."""

    choice: int
    reason: str
    stop: Stop


@dataclass(slots=True, frozen=True)
class TokenLogprob:
    """One answer token's log probability, as the provider reported it (seed 000 `logprobs`)."""

    token: str
    logprob: float
    bytes: tuple[int, ...] | None = None
    """The token's UTF-8 bytes, where the provider gives them (a token may be part of a character)."""
    top: tuple[TokenLogprob, ...] = ()
    """The likeliest alternatives at that step (`topLogprobs` of them), the token itself often among them."""


@dataclass(slots=True, frozen=True)
class Logprobs:
    """Log probabilities of the answer tokens the provider just produced, in order. They belong to an
    answer (`choice`), not to a part: providers report them per answer, beside the text."""

    tokens: tuple[TokenLogprob, ...]
    choice: int = 0


@dataclass(slots=True)  # not frozen: a frozen __init__ costs three times a plain one, paid per token
class Raw:
    """The provider's own words, for a caller who speaks the same protocol (DESIGN: "same
    protocol, no translation"). Emitted only for a passthrough attempt (routing/passthrough.py
    hands the exchange its way of wrapping them): the whole body of a buffered answer (just before
    the canonical events decoded from it), or each SSE event of a stream, carrying the canonical
    events decoded from it (`decoded`). A stream's token is then one event, not two, through every layer between the
    provider and the caller: that halves a passthrough token's cost there. The Assembler adds the
    decoded events; translating doors never see a Raw (they serve other wires)."""

    data: str
    """The JSON text: the whole body, or one SSE event's data (`[DONE]` included)."""
    event: str | None = None
    """The SSE event name, for protocols that name their events (Anthropic)."""
    parsed: Any = field(default=None, compare=False, repr=False)
    """The JSON the wire's stream decoder already parsed from `data` (a dict), when it keeps it, so a
    passthrough writer need not parse every chunk a second time. Never mutate it: copy what changes."""
    decoded: tuple[Event, ...] = field(default=(), compare=False, repr=False)
    """A stream's SSE event: the canonical events decoded from it, in order (the record's usage and
    finish, the start of output, the text a route keeps)."""


@dataclass(slots=True, frozen=True)
class Continued:
    """Another offering takes over a stream that failed after output (streamFailureBehavior
    rollover): what follows continues the same answer, from the text the caller already has."""

    model: str
    tier: str | None
    publisher: str
    provider: str
    reason: str
    """Why the previous offering stopped."""


Event = PartStart | Delta | PartEnd | UsageEvent | Finish | Raw | Continued | Logprobs


class StreamOrderError(RuntimeError):
    """Events or frames in an impossible order: a bug in the wire or writer that produced them."""


_JOIN_EVERY = 256
"""A part's kept deltas are joined into one piece this many at a time (`Assembler._delta`)."""


@dataclass(slots=True)
class _Part:
    kind: PartKind
    choice: int = 0
    chunks: list[str] = field(default_factory=list)
    tool_id: str | None = None
    tool_name: str | None = None
    data: dict[str, Any] | None = None
    done: bool = False
    loose: int = 0
    """Deltas at the end of `chunks` not yet joined into a piece."""


@dataclass(slots=True)
class Assembler:
    """Keeps the parts of one turn as events arrive; `messages()` gives the finished turn.

    A stream's events are written out as they pass, so an assembler following one keeps only what
    is asked of it: `keep_text=False` keeps no text (the parts' kinds and states, usage, finish and
    the size of the output still), `keep_raw=False` no Raw events (only a buffered same-protocol
    answer is written from them). Each kept copy would otherwise grow with every token.
    """

    parts: dict[int, _Part] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    finish: Finish | None = None
    output_started: bool = False
    """True once anything the caller can see has been produced (text, reasoning or a tool call)."""
    raw: list[Raw] = field(default_factory=list)
    """The provider's own words, for a buffered same-protocol answer (empty unless passthrough)."""
    output_bytes: int = 0
    """UTF-8 bytes of every delta, kept or not: what an estimate of output tokens is made from."""
    logprobs: dict[int, list[TokenLogprob]] = field(default_factory=dict)
    """Each answer's token log probabilities, by choice (kept with the text: `keep_text`)."""
    keep_text: bool = True
    keep_raw: bool = True

    def add(self, event: Event) -> None:
        # The two events every token of a stream brings, first (a match tries its cases in turn).
        kind = type(event)
        if kind is Delta:
            self._delta(event)  # type: ignore[arg-type]
        elif kind is Raw:
            if self.keep_raw:
                self.raw.append(event)  # type: ignore[arg-type]
            for inner in event.decoded:  # type: ignore[union-attr]
                self.add(inner)
        else:
            self._add_other(event)

    def _delta(self, event: Delta) -> None:
        part = self._open(event.index)
        text = event.text
        if text:
            if self.keep_text:
                part.chunks.append(text)
                part.loose += 1
                if part.loose == _JOIN_EVERY:
                    # One str per token costs ~50 bytes besides its text: every few hundred deltas
                    # are joined into one piece, so what is kept grows by the text alone.
                    part.chunks[-_JOIN_EVERY:] = ["".join(part.chunks[-_JOIN_EVERY:])]
                    part.loose = 0
            self.output_bytes += len(text.encode("utf-8"))
            self.output_started = True

    def _add_other(self, event: Event) -> None:
        match event:
            case PartStart(index=i, kind=kind):
                if i in self.parts:
                    raise StreamOrderError(f"part {i} started twice")
                self.parts[i] = _Part(kind, event.choice, tool_id=event.tool_id, tool_name=event.tool_name)
                if kind == "toolCall":
                    self.output_started = True
            case Delta():
                self._delta(event)
            case PartEnd(index=i, data=data):
                part = self._open(i)
                part.data = data
                part.done = True
            case UsageEvent(usage=usage):
                self.usage.merge(usage)
            case Finish():
                self.finish = event
            case Logprobs(tokens=tokens, choice=choice):
                if self.keep_text:
                    self.logprobs.setdefault(choice, []).extend(tokens)
            case Raw():
                self.add(event)

    def _open(self, index: int) -> _Part:
        part = self.parts.get(index)
        if part is None or part.done:
            raise StreamOrderError(f"part {index} is not open")
        return part

    def messages(self, choice: int = 0) -> list[ContentMessage | ThinkingMessage | ToolCallMessage]:
        """The turn of one answer: the first, unless the call asked for several and names another."""
        out: list[ContentMessage | ThinkingMessage | ToolCallMessage] = []
        for index in sorted(self.parts):
            part = self.parts[index]
            if part.choice != choice:
                continue
            text = "".join(part.chunks)
            if part.kind == "content":
                out.append(ContentMessage(value=text, data=part.data))
            elif part.kind == "thinking":
                out.append(ThinkingMessage(value=text, data=part.data))
            else:
                call = ToolCallBody(
                    id=part.tool_id or f"call_{index}",
                    name=part.tool_name or "",
                    arguments=text or "{}",
                    data=part.data,
                )
                out.append(ToolCallMessage(call=call))
        return out
