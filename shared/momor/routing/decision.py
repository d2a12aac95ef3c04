"""A decision (POST /models/decision): a model picks one of the caller's options, and the answer is
guaranteed to be one of them.

How each candidate is held to the options depends on what its model offers (catalog capabilities):
- `enum`: structured output (`structuredOutput: jsonSchema`) with a schema whose `choice` is an
  enum of the options;
- `tool`: a forced call of one tool, `choose`, whose `choice` argument is that enum (`tools`);
- `text`: the options listed in the system prompt and the answer matched against them.
Whatever the strategy, the answer is checked. One outside the options is asked again once, with
the options restated; a second miss fails that offering over to the next candidate. A rejected
answer stays on the record as a failed attempt with what the provider billed for it.

Each try is one routed Session over one candidate, so retries, timeouts, breakers, keys and the
record are the generation's own (attempts.py).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Literal

from .. import invocation
from ..call import Call, ToolUse
from ..errors import AttemptSummary, NoCandidateServed, ProviderError
from ..events import Usage
from ..messages import ContentMessage, Tool, ToolCallMessage, UserMessage
from .attempts import Session
from .keys import KeyResolver
from .plan import Candidate
from .policy import current_policy
from .recorder import Recorder

Strategy = Literal["enum", "tool", "text"]
TOOL_NAME = "choose"
REJECTED = "the answer was not one of the options"


@dataclass(slots=True, frozen=True)
class Decision:
    choice: str
    candidate: Candidate
    usage: Usage


def strategy_for(candidate: Candidate) -> Strategy:
    caps = candidate.model.capabilities
    if caps.structured_output == "jsonSchema":
        return "enum"
    return "tool" if caps.tools else "text"


def choice_schema(options: list[str]) -> dict:
    return {"type": "object", "properties": {"choice": {"type": "string", "enum": options}},
            "required": ["choice"], "additionalProperties": False}


def _listing(options: list[str]) -> str:
    return "\n".join(f"- {o}" for o in options)


def constrained(call: Call, options: list[str], strategy: Strategy) -> Call:
    """The caller's call, held to the options the way this candidate's model can be."""
    call = dataclasses.replace(call, stream=False, tools=[], response_schema=None)
    if strategy == "enum":
        params = call.params.model_copy(update={"tool_use": None, "strict": True})
        return dataclasses.replace(call, response_schema=choice_schema(options), params=params)
    if strategy == "tool":
        tool = Tool(name=TOOL_NAME, description="Give your decision: exactly one of the options.",
                    parameters=choice_schema(options))
        params = call.params.model_copy(update={"tool_use": ToolUse(type="use", name=TOOL_NAME),
                                                "parallel_tool_calls": None})
        return dataclasses.replace(call, tools=[tool], params=params)
    system = (f"{call.system}\n\n" if call.system else "") + (
        "Answer with exactly one of these options, written as it is here, and nothing else:\n" + _listing(options))
    params = call.params.model_copy(update={"tool_use": None})
    return dataclasses.replace(call, system=system, params=params)


def answer_text(messages: list, strategy: Strategy) -> str:
    """What the model answered, as text: the `choice` it gave where the strategy asks for one."""
    if strategy == "tool":
        calls = [m for m in messages if isinstance(m, ToolCallMessage)]
        raw = calls[0].call.arguments if calls else "".join(m.value for m in messages
                                                             if isinstance(m, ContentMessage))
    else:
        raw = "".join(m.value for m in messages if isinstance(m, ContentMessage))
    if strategy in ("enum", "tool"):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(value, dict) and isinstance(value.get("choice"), str):
            return value["choice"]
    return raw


def match(answer: str, options: list[str]) -> str | None:
    """The option the answer names: exactly, else once trimmed of quotes, spaces and a final
    period, else the one option equal to it ignoring case. None when it names none (or several)."""
    if answer in options:
        return answer
    trimmed = answer.strip().strip("\"'`*").strip().rstrip(".").strip()
    if trimmed in options:
        return trimmed
    folded = [o for o in options if o.casefold() == trimmed.casefold()]
    return folded[0] if len(folded) == 1 else None


def _corrected(call: Call, answer: str, options: list[str]) -> Call:
    """The same call with the miss and a reminder appended: the one retry."""
    reminder = UserMessage(value=f"That is not one of the options. Answer with exactly one of:\n{_listing(options)}")
    said = ContentMessage(value=answer or "(no answer)")
    return dataclasses.replace(call, messages=[*call.messages, said, reminder])


async def decide(
    call: Call, options: list[str], candidates: list[Candidate], recorder: Recorder, *,
    resolve_key: KeyResolver, network_timeout: float | None = None, deadline: float | None = None,
) -> Decision:
    summaries: list[AttemptSummary] = []
    # One budget for every try on every candidate, within the invocation (`deadline`): each Session
    # would otherwise start a budget of its own, and Lambda's timeout would end the call unrecorded.
    end = invocation.call_end(current_policy().call_budget, deadline)
    for candidate in candidates:
        strategy = strategy_for(candidate)
        held = constrained(call, options, strategy)
        for _ in range(2):  # the answer, then one retry with the options restated
            session = Session(held, [candidate], recorder, resolve_key=resolve_key, network_timeout=network_timeout,
                              deadline=end)
            try:
                opened = await session.open()  # a final refusal (content policy) propagates, as on POST /models
            except NoCandidateServed as exc:
                summaries.extend(exc.attempts)
                break
            try:
                async for _event in opened.events:
                    pass
            except ProviderError as exc:  # a buffered answer that broke after opening
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, exc.detail))
                _reopen(recorder)
                break
            answer = answer_text(opened.assembler.messages(), strategy)
            choice = match(answer, options)
            if choice is not None:
                return Decision(choice, candidate, opened.assembler.usage)
            _reject(recorder)
            held = _corrected(held, answer, options)
        else:
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, REJECTED))
    tried = [a for a in recorder.attempts if a.status != "skipped"]
    raise NoCandidateServed(summaries, status=502 if tried else 503)


def _reject(recorder: Recorder) -> None:
    """The last attempt answered, but outside the options: a failure (its billed cost stays), not
    what the caller gets, and the call goes on."""
    attempt = recorder.timers[-1].attempt
    attempt.status = "failed"
    attempt.error = f"invalid: {REJECTED}"
    attempt.delivered = False
    _reopen(recorder)


def _reopen(recorder: Recorder) -> None:
    """The Session ended the call when its answer was read; a decision may still go on."""
    recorder.outcome, recorder.error = None, None
