"""The attempt loop against a programmable exchange (pydantic-ai's FunctionModel idea): what each
failure leads to, how many attempts each offering sees and when, and what the record holds."""

from __future__ import annotations

import asyncio

import pytest

from momor.call import Call
from momor.catalog import parse_catalog
from momor.errors import NoCandidateServed, ProviderError
from momor.events import Delta, Finish, PartEnd, PartStart, Usage, UsageEvent
from momor.messages import UserMessage
from momor.routing import attempts as attempts_module
from momor.routing.attempts import Session
from momor.routing.breaker import Breakers
from momor.routing.keys import ResolvedKey
from momor.routing.plan import plan
from momor.routing.policy import Policy, classify, context_exceeded
from momor.routing.recorder import Recorder
from momor.routing.selectors import parse_prioritization, parse_selectors

CATALOG = parse_catalog({
    "providers": [
        {"name": "a", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:9/v1"},
        {"name": "b", "wire": "anthropic", "baseUrl": "http://127.0.0.1:9"},
        {"name": "c", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:9/v1"},
    ],
    "models": [
        {"name": "m", "publisher": "p", "tier": "low", "capabilities": {"contextWindow": 8000},
         "offerings": [{"provider": "a", "id": "m-a", "prices": {"input": 1, "output": 1}},
                       {"provider": "b", "id": "m-b", "prices": {"input": 2, "output": 2}}]},
        {"name": "big", "publisher": "p", "tier": "low", "capabilities": {"contextWindow": 100000},
         "offerings": [{"provider": "c", "id": "big-c", "prices": {"input": 3, "output": 3}}]},
    ],
})

_pause = asyncio.sleep  # not the one tests replace to watch the attempt loop's waits
ANSWER = [PartStart(0, "content"), Delta(0, "hi"), PartEnd(0), UsageEvent(Usage(3, 1)), Finish("stop", "stop")]
FAST = Policy(retries=2, retry_base=0.001, retry_max=0.002, first_token_timeout=0.3, idle_timeout=0.3)


def http(status, retry_after=None, body=None):
    return ProviderError(f"answered {status}", kind="http", upstream_status=status, retry_after=retry_after,
                         body=body)


class Script:
    """What each offering does on each call: a list of steps consumed in order (the last repeats)."""

    def __init__(self, **steps):
        self.steps = {k: list(v) for k, v in steps.items()}
        self.calls: list[str] = []
        self.sent: list[Call] = []
        """The call each request was sent, in order."""
        self.closed: list[str] = []
        """Offerings whose exchange was closed before its answer ended."""

    async def exchange(self, wire, call, target, *, stream, timeouts, words=None):
        offering = target.offering.provider
        self.calls.append(offering)
        self.sent.append(call)
        queue = self.steps.get(offering, [ANSWER])
        step = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(step, BaseException):
            raise step
        try:
            for item in step:
                if isinstance(item, float):
                    await asyncio.sleep(item)  # a silence on the wire
                elif isinstance(item, BaseException):
                    raise item  # a failure mid-answer
                else:
                    yield item
                    await _pause(0)  # the next event is read off the network: the loop runs
        except GeneratorExit:
            self.closed.append(offering)
            raise


def session(script, selectors="m", policy=FAST, stream=False, breakers=None, resolve=None, order=()):
    call = Call(system="", messages=[UserMessage(value="hello")], stream=stream)
    prio = parse_prioritization({"order": list(order)})
    candidates = plan(CATALOG, parse_selectors(selectors, None), prio)
    recorder = Recorder("rid", "/models", "native", streaming=stream)
    return Session(call, candidates, recorder, resolve_key=resolve or (lambda c: ResolvedKey("k", "saved")),
                   policy=policy, breakers=breakers or Breakers(), exchange_fn=script.exchange)


async def drain(answer):
    return [e async for e in answer.events]


def statuses(s):
    return [(a.provider, a.status, a.http_status) for a in s.recorder.attempts]


async def test_a_passing_503_is_retried_then_served():
    script = Script(a=[http(503), ANSWER])
    s = session(script)
    answer = await s.open()
    assert answer.served.provider.name == "a"
    await drain(answer)
    assert script.calls == ["a", "a"]
    assert statuses(s) == [("a", "failed", 503), ("a", "ok", 200)]


async def test_retries_are_bounded_then_the_next_candidate_serves():
    script = Script(a=[http(500)])
    s = session(script)
    assert (await s.open()).served.provider.name == "b"
    assert script.calls == ["a", "a", "a", "b"]


async def test_retry_after_is_honoured(monkeypatch):
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    monkeypatch.setattr(attempts_module.asyncio, "sleep", sleep)
    script = Script(a=[http(429, retry_after=1.5), ANSWER])
    s = session(script)
    await s.open()
    assert waits == [1.5]


async def test_a_retry_after_longer_than_momor_waits_fails_over_at_once():
    script = Script(a=[http(429, retry_after=3600)])
    s = session(script)
    assert (await s.open()).served.provider.name == "b"
    assert script.calls == ["a", "b"]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_refusals_fail_over_without_retrying(status):
    script = Script(a=[http(status)])
    s = session(script)
    assert (await s.open()).served.provider.name == "b"
    assert script.calls == ["a", "b"]


async def test_a_content_policy_refusal_is_final_with_the_providers_reason():
    refusal = ProviderError("flagged by the provider's content policy", kind="refused", upstream_status=400)
    script = Script(a=[refusal])
    s = session(script)
    with pytest.raises(ProviderError) as info:
        await s.open()
    assert info.value.status == 400 and "content policy" in info.value.detail
    assert script.calls == ["a"]


async def test_context_length_exceeded_moves_to_a_larger_window_only():
    too_long = http(400, body={"error": {"message": "This model's maximum context length is 8000 tokens"}})
    assert context_exceeded(too_long)
    script = Script(a=[too_long])
    s = session(script, selectors=None, order=("a", "b", "c"))
    served = (await s.open()).served
    assert served.provider.name == "c"
    assert script.calls == ["a", "c"]  # b serves the same 8000-token model: passed over
    assert ("b", "skipped", None) in statuses(s)


async def test_a_silent_provider_fails_over_after_the_first_token_timeout():
    script = Script(a=[[5.0, *ANSWER]])
    s = session(script, stream=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert (await s.open()).served.provider.name == "b"
    assert loop.time() - started < 2.0  # bounded by the 0.3 s timeout, not the 5 s silence
    assert s.recorder.attempts[0].error.startswith("timeout")


async def test_a_stream_that_stalls_after_output_is_an_error_not_a_finish():
    stalls = [PartStart(0, "content"), Delta(0, "par"), 5.0, Delta(0, "tial"), PartEnd(0), Finish("stop", "stop")]
    script = Script(a=[stalls])
    s = session(script, stream=True)
    answer = await s.open()
    with pytest.raises(ProviderError) as info:
        await drain(answer)
    assert info.value.after_output and info.value.kind == "timeout"
    assert statuses(s) == [("a", "failed", None)]


async def test_a_stream_cut_without_a_finish_is_an_error():
    script = Script(a=[[PartStart(0, "content"), Delta(0, "half")]])
    s = session(script, stream=True)
    answer = await s.open()
    with pytest.raises(ProviderError, match="before the answer was complete"):
        await drain(answer)


async def test_the_call_budget_stops_new_attempts():
    script = Script(a=[http(503)], b=[http(503)])
    s = session(script, policy=Policy(retries=50, retry_base=0.05, retry_max=0.05, call_budget=0.3))
    with pytest.raises(NoCandidateServed):
        await s.open()
    assert 2 <= len(script.calls) < 20


async def test_candidates_without_a_key_are_passed_over_and_said_so():
    script = Script()
    s = session(script, resolve=lambda c: "no key for this provider" if c.provider.name == "a"
                else ResolvedKey("k", "saved"))
    assert (await s.open()).served.provider.name == "b"
    assert statuses(s)[0] == ("a", "skipped", None)


async def test_everything_failing_says_why_for_each_candidate():
    script = Script(a=[http(503)], b=[http(429, retry_after=999)])
    s = session(script)
    with pytest.raises(NoCandidateServed) as info:
        await s.open()
    assert "m on a" in info.value.detail and "m on b" in info.value.detail
    assert info.value.status == 502


async def test_all_rate_limited_is_a_429():
    script = Script(a=[http(429, retry_after=999)], b=[http(429, retry_after=999)])
    with pytest.raises(NoCandidateServed) as info:
        await session(script).open()
    assert info.value.status == 429


async def test_the_breaker_opens_then_probes_then_closes():
    now = [0.0]
    breakers = Breakers(failures=3, cooldown=10, clock=lambda: now[0])
    script = Script(a=[http(503)])
    s = session(script, policy=Policy(retries=2, retry_base=0.001, retry_max=0.001), breakers=breakers)
    await s.open()  # three failures on a, then b serves
    assert breakers.state("a/m-a") == "open"
    script.calls.clear()
    await session(script, breakers=breakers).open()
    assert script.calls == ["b"]  # a is behind b while open
    now[0] = 11
    assert breakers.state("a/m-a") == "half_open"
    script.steps["a"] = [ANSWER]
    script.calls.clear()
    assert (await session(script, breakers=breakers).open()).served.provider.name == "a"  # the probe
    assert breakers.state("a/m-a") == "closed"


async def test_a_callers_own_key_neither_probes_nor_closes_a_half_open_circuit():
    """Issue 33: an attempt on a key the caller sent reports to no circuit: it takes no half-open
    probe (the next call on the deployment's key still probes), and its answer closes nothing."""
    now = [0.0]
    breakers = Breakers(failures=1, cooldown=10, clock=lambda: now[0])
    breakers.failure("a/m-a")
    now[0] = 11
    assert breakers.state("a/m-a") == "half_open"
    script = Script(a=[ANSWER])
    own = session(script, breakers=breakers, resolve=lambda c: ResolvedKey("callers-own", "call"))
    assert (await own.open()).served.provider.name == "a"
    assert breakers.state("a/m-a") == "half_open" and breakers.allows("a/m-a")  # still the next call's probe
    script.steps["a"] = [http(503)]
    failing = session(script, policy=Policy(retries=0), breakers=breakers,
                      resolve=lambda c: ResolvedKey("callers-own", "call") if c.provider.name == "a"
                      else ResolvedKey("k", "saved"))
    await failing.open()  # a fails on the caller's key, b serves
    assert breakers.state("a/m-a") == "half_open" and breakers.allows("a/m-a")  # the failure was not counted


def test_backoff_grows_with_full_jitter_and_a_ceiling():
    policy = Policy(retry_base=0.1, retry_max=1.0)
    for retry, ceiling in ((1, 0.1), (2, 0.2), (3, 0.4), (8, 1.0)):
        waits = [policy.backoff(retry, None) for _ in range(200)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert len(set(waits)) > 1  # jitter: never a fixed tight loop
    assert policy.backoff(1, 2.5) == 2.5


@pytest.mark.parametrize(
    ("error", "decision"),
    [
        (ProviderError("x", kind="connect"), "retry"),
        (http(429), "retry"), (http(500), "retry"), (http(502), "retry"), (http(503), "retry"),
        (http(504), "retry"), (http(529), "retry"),
        (http(400), "failover"), (http(401), "failover"), (http(403), "failover"),
        (ProviderError("x", kind="timeout"), "failover"), (ProviderError("x", kind="protocol"), "failover"),
        (ProviderError("x", kind="unsupported"), "failover"),
        (ProviderError("x", kind="refused"), "final"),
    ],
)
def test_classification(error, decision):
    assert classify(error) == decision


def test_policy_from_env():
    policy = Policy.from_env({"MOMOR_RETRIES": "4", "MOMOR_RETRY_BASE_MS": "50", "MOMOR_IDLE_TIMEOUT_S": "7"})
    assert (policy.retries, policy.retry_base, policy.idle_timeout) == (4, 0.05, 7.0)
    assert Policy.from_env({}) == Policy()


def test_only_the_parameters_a_provider_honours_reach_it():
    from types import SimpleNamespace

    from momor.call import Parameters
    from momor.routing.params import params_for

    def to(*honoured: str) -> SimpleNamespace:
        return SimpleNamespace(provider=SimpleNamespace(parameters=list(honoured)))

    given = Parameters.model_validate({"maxTokens": 5, "temperature": 0.3, "topP": None, "seed": 7})
    assert params_for(given, to("maxTokens", "temperature", "seed")) is given  # all honoured: as it was
    kept = params_for(given, to("maxTokens"))
    assert kept.model_dump(by_alias=True, exclude_none=True) == {"maxTokens": 5}
    assert given.temperature == 0.3  # the caller's own parameters are left as they were
    # params_for reads the fields set, which holds every field with a value only while none defaults to one.
    assert all(f.default is None and f.default_factory is None for f in Parameters.model_fields.values())
