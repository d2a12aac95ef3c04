"""Token log probabilities as the wires report them, read into canonical `TokenLogprob`s.

Two shapes exist among Momor's wires:
- OpenAI's, shared by Chat Completions (`choices[].logprobs.content`, per chunk in a stream) and
  the Responses API (`output_text.logprobs`, and `logprobs` on `response.output_text.delta`):
  `[{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]`.
- Google's (Gemini and Vertex, `candidates[].logprobsResult`): `chosenCandidates` (one per decoding
  step: `{"token", "tokenId", "logProbability"}`) beside `topCandidates` (per step,
  `{"candidates": [...]}`), the two lists the same length.
A malformed entry is passed over rather than failing the answer: log probabilities are a report
on the answer, not the answer.
"""

from __future__ import annotations

from typing import Any

from ..events import TokenLogprob


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _bytes(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and all(isinstance(b, int) for b in value):
        return tuple(value)
    return None


def _openai_one(item: Any, with_top: bool) -> TokenLogprob | None:
    if not isinstance(item, dict) or not isinstance(item.get("token"), str):
        return None
    logprob = _number(item.get("logprob"))
    if logprob is None:
        return None
    top: tuple[TokenLogprob, ...] = ()
    if with_top and isinstance(item.get("top_logprobs"), list):
        top = tuple(t for t in (_openai_one(x, False) for x in item["top_logprobs"]) if t is not None)
    return TokenLogprob(item["token"], logprob, _bytes(item.get("bytes")), top)


def from_openai(items: Any) -> tuple[TokenLogprob, ...]:
    """OpenAI's token list (Chat Completions' `logprobs.content`, Responses' `logprobs`)."""
    if not isinstance(items, list):
        return ()
    return tuple(t for t in (_openai_one(x, True) for x in items) if t is not None)


def _google_one(item: Any) -> TokenLogprob | None:
    if not isinstance(item, dict) or not isinstance(item.get("token"), str):
        return None
    logprob = _number(item.get("logProbability"))
    # Google leaves a zero field out of its JSON: a token it reports without one is certain (0.0).
    return TokenLogprob(item["token"], 0.0 if logprob is None else logprob)


def from_google(result: Any) -> tuple[TokenLogprob, ...]:
    """A candidate's `logprobsResult`: each chosen token with its step's top candidates."""
    if not isinstance(result, dict) or not isinstance(result.get("chosenCandidates"), list):
        return ()
    steps = result.get("topCandidates")
    steps = steps if isinstance(steps, list) else []
    out: list[TokenLogprob] = []
    for position, chosen in enumerate(result["chosenCandidates"]):
        token = _google_one(chosen)
        if token is None:
            continue
        step = steps[position] if position < len(steps) and isinstance(steps[position], dict) else {}
        alternatives = step.get("candidates")
        alternatives = alternatives if isinstance(alternatives, list) else []
        top = tuple(t for t in map(_google_one, alternatives) if t is not None)
        out.append(TokenLogprob(token.token, token.logprob, None, top))
    return tuple(out)
