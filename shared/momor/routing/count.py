"""Counting a call's input tokens (the Anthropic route's count_tokens), as a routed operation.

The model that would serve the call is asked to count on its first offering whose wire can
(`count_request`): exact for that model. Each try is an attempt on the call record, mapped like
any provider failure. When no offering can count, or every try fails, the count is estimated
offline (tokens.py) and the answer says so.
"""

from __future__ import annotations

from .. import tokens
from ..call import Call
from ..caller_body import CallerBody
from ..errors import ProviderError
from ..providers.counting import count_tokens as provider_count
from ..providers.registry import facts as wire_facts
from .keys import KeyResolver
from .passthrough import way_for
from .plan import Candidate
from .recorder import Recorder


async def count_input_tokens(
    call: Call, caller_body: CallerBody | None, candidates: list[Candidate], resolve_key: KeyResolver,
    recorder: Recorder,
) -> tuple[int, str]:
    """(tokens, "provider" | "estimate"). An offering that speaks the caller's protocol counts the
    caller's own body (the same passthrough decision as a generation's: routing/passthrough.py)."""
    first_model = candidates[0].model.name if candidates else None
    for candidate in candidates:
        if candidate.model.name != first_model:
            continue
        way = way_for(candidate.provider.wire, caller_body)
        facts = wire_facts(way.wire.name)
        if facts is None or not facts.counts_tokens:
            continue
        wire = way.wire
        key = resolve_key(candidate)
        if isinstance(key, str):
            recorder.skip(candidate, key)
            continue
        timer = recorder.begin(candidate, key.source, key.key, key_label=key.label, base_url=key.base_url)
        target = key.target(candidate, passthrough_body=way.body,
                            betas=caller_body.betas if caller_body is not None else ())
        try:
            count = await provider_count(wire, call, target)
        except ProviderError as exc:
            timer.fail(exc)
            continue
        timer.succeed_free()
        recorder.end("complete")
        return count, "provider"
    recorder.end("complete")
    return tokens.count_input_tokens(call), "estimate"
