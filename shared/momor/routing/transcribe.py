"""Transcribing audio over the planned transcription offerings: POST /models/transcribe, and the
audio-to-text conversion of file processing (conversion.py).

A transcription is one non-streaming exchange per attempt, so the loop is the generation's rules
in small (attempts.py): offerings whose circuit is open go last, a retryable failure is retried on
the same offering with the policy's backoff, anything else fails over, a content-policy refusal is
final. Every attempt is on the record with its usage and cost: by the minute where the catalog
prices the offering `perMinute` (the provider's reported duration, else the WAV's own length), and
by the token for what the provider reports in tokens.

Which wire transcribes for a provider is a table on the provider's catalog wire: OpenAI's
transcription API for providers on an OpenAI wire. Gemini takes audio as ordinary input to
generateContent; when that wire exists, map it here (`"gemini": "gemini_transcribe"`, a module
exposing the same build_request/parse_response/map_error over `Audio`) and nothing else changes.
"""

from __future__ import annotations

import io
import time
import wave
from dataclasses import dataclass
from decimal import Decimal

from .. import invocation
from ..audio import Audio
from ..errors import AttemptSummary, NoCandidateServed, ProviderError
from ..providers import wire_for
from ..providers.multipart import post_multipart
from ..providers.openai_transcribe import Transcript
from ..providers.registry import REGISTRY
from ..providers.transport import Timeouts
from ..store.records import cost_usd
from .circuits import process_breakers
from .key_failover import reporting_to, retry_with
from .keys import KeyResolver, ResolvedKey
from .plan import Candidate
from .policy import counts_against_breaker, current_policy
from .recorder import AttemptTimer, Recorder

TRANSCRIPTION_WIRES: dict[str, str] = {f.name: f.transcribes_over for f in REGISTRY if f.transcribes_over}
"""A provider's catalog wire -> the wire module its transcription goes over (providers/registry.py)."""
OUT_OF_TIME = "the call's time budget ran out"


@dataclass(slots=True, frozen=True)
class Transcribed:
    candidate: Candidate
    transcript: Transcript
    duration_seconds: float | None
    cost: Decimal


def wav_seconds(data: bytes) -> float | None:
    """A WAV file's length from its header; None for anything else."""
    try:
        with wave.open(io.BytesIO(data)) as w:
            rate = w.getframerate()
            return w.getnframes() / rate if rate else None
    except (wave.Error, EOFError, ValueError):
        return None


async def transcribe(
    audio: Audio, candidates: list[Candidate], recorder: Recorder, *, resolve_key: KeyResolver,
    language: str | None = None, prompt: str | None = None, network_timeout: float | None = None,
    deadline: float | None = None,
) -> Transcribed:
    """`deadline`: the invocation's (momor.invocation); the call's budget ends there at the latest."""
    breakers = process_breakers()
    end = invocation.call_end(current_policy().call_budget, deadline)
    ordered = [c for c in candidates if breakers.allows(c.circuit)]
    ordered += [c for c in candidates if c not in ordered]
    summaries: list[AttemptSummary] = []
    for candidate in ordered:
        wire_name = TRANSCRIPTION_WIRES.get(candidate.provider.wire)
        key = resolve_key(candidate) if wire_name else f"wire {candidate.provider.wire!r} has no transcription API"
        if isinstance(key, str):
            recorder.skip(candidate, key)
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, key))
            continue
        done = await _offering(audio, candidate, key, wire_name or "", recorder, summaries,
                               language=language, prompt=prompt, network_timeout=network_timeout, end=end,
                               resolve_key=resolve_key)
        if done is not None:
            return done
    tried = [a for a in recorder.attempts if a.status != "skipped"]
    raise NoCandidateServed(summaries, status=502 if tried else 503)


async def _offering(
    audio: Audio, candidate: Candidate, key: ResolvedKey, wire_name: str, recorder: Recorder,
    summaries: list[AttemptSummary], *, language: str | None, prompt: str | None, network_timeout: float | None,
    end: float, resolve_key: KeyResolver,
) -> Transcribed | None:
    """Attempts at one offering, retries included: the transcription, or None to fail over."""
    policy = current_policy()
    breakers, circuit = reporting_to(candidate, key)
    wire = wire_for(wire_name)
    target = key.target(candidate)
    timeouts = Timeouts(policy.connect_timeout, policy.first_token_timeout, policy.idle_timeout).shortened(
        network_timeout)
    for retry in range(policy.retries + 1):
        left = end - time.monotonic()
        if left <= 0:  # no attempt starts past the call's budget (or the invocation's end)
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, OUT_OF_TIME))
            return None
        timer = recorder.begin(candidate, key.source, key.key, key_label=key.label, base_url=key.base_url)
        traced = recorder.traced(target, timer)
        breakers.begin(circuit)
        try:
            request = wire.build_request(audio, traced, language=language, prompt=prompt)  # type: ignore[attr-defined]
            exchange = post_multipart(wire, request, traced, timeouts=timeouts.shortened(left))
            transcript = wire.parse_response(await exchange)
        except ProviderError as exc:
            timer.fail(exc)
            (breakers.failure if counts_against_breaker(exc) else breakers.success)(circuit)
            again = await retry_with(exc, candidate, key, resolve_key, policy, retry, end)
            if again is None:
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, exc.detail))
                return None
            if again is not key:  # the same offering, on another of its saved keys
                key, (breakers, circuit) = again, reporting_to(candidate, again)
                target = key.target(candidate)
            continue
        breakers.success(circuit)
        return _succeeded(timer, candidate, transcript, audio)
    return None


def _succeeded(timer: AttemptTimer, candidate: Candidate, transcript: Transcript, audio: Audio) -> Transcribed:
    seconds = transcript.duration_seconds if transcript.duration_seconds is not None else wav_seconds(audio.data)
    prices = candidate.offering.prices
    cost = cost_usd(transcript.usage, prices)
    if prices.per_minute is not None and seconds is not None:
        cost += Decimal(str(prices.per_minute)) * Decimal(str(seconds)) / 60
    timer.succeed_free()  # delivered: its transcript is what the caller gets
    timer.attempt.usage, timer.attempt.cost = transcript.usage, cost
    return Transcribed(candidate, transcript, seconds, cost)
