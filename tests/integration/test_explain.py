"""Explaining a route (X-Momor-Explain: 1) over HTTP on every dialect, through the official SDKs
where the dialect has one: the plan comes back, no provider hears of it, and the same call made for
real is served by the explanation's first candidate, with the plan's compact form on its record.

The call used on the three seed dialects asks `tier/low`, then `duo`, ignoring mistral, so the
test catalog's offerings are left out by several rules: selector (other tiers), ignore
(mistral-small@mistral), cutoff (low models released before the catalog's cutoff), deprecated (a
variant marks gpt-5-nano deprecated), kind (low decision and transcription models).
"""

from __future__ import annotations

import json
import random
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from momor.routing import families
from momor.routing import plan as planning
from tests.faults.support import model_entry, record_of, write_variant

pytestmark = pytest.mark.emulators

EXPLAIN = {"X-Momor-Explain": "1"}
USER = [{"role": "user", "content": "one two three"}]
RULES = {"selector", "unclassified", "kind", "except", "deprecated", "maxAge", "cutoff", "ignore", "capability",
         "breaker", "key", "zdr"}
EXPECTED_CANDIDATES = ["llama-3.3-70b@deepinfra", "duo@flaky", "duo@backup"]


def _deprecate_nano(momor: Any) -> None:
    write_variant(momor, lambda c: model_entry(c, "gpt-5-nano").update(deprecated=True))


def _every_offering(catalog: dict[str, Any]) -> set[str]:
    return {f"{m['name']}@{o['provider']}" for m in catalog["models"] for o in m["offerings"]}


def _check_explanation(momor: Any, fake: Any, body: dict[str, Any], dialect: str) -> list[dict[str, Any]]:
    """The explanation's shape, and that it accounts for every offering of the catalog once."""
    assert fake.requests() == [], "explaining called a provider"
    assert body["object"] == "momor.explanation" and body["dialect"] == dialect and body["refused"] is None
    candidates = body["candidates"]
    ids = [f"{c['model']}@{c['provider']}" for c in candidates]
    left = {f"{o['model']}@{o['provider']}": o for o in body["leftOut"]}
    assert not set(ids) & set(left), "an offering both planned and left out"
    assert set(ids) | set(left) == _every_offering(momor.catalog), "an offering not accounted for"
    assert len(left) == len(body["leftOut"])
    for o in body["leftOut"]:
        assert o["why"], o
    for c in candidates:
        assert c["wire"] and c["price"]["input"] is not None and c["keySource"] == "saved", c
    assert body["counts"] == {rule: sum(o["rule"] == rule for o in body["leftOut"]) for rule in body["counts"]}
    return candidates


def _check_reasons(body: dict[str, Any]) -> None:
    left = {f"{o['model']}@{o['provider']}": o["rule"] for o in body["leftOut"]}
    assert [f"{c['model']}@{c['provider']}" for c in body["candidates"]] == EXPECTED_CANDIDATES
    assert left["mistral-small@mistral"] == "ignore"
    assert left["gpt-4.1-mini@azure@eu"] == "cutoff" and left["nemotron-super-49b@nvidia"] == "cutoff"
    assert left["gpt-5-nano@puter"] == "deprecated"
    assert left["gpt-5-nano-decide@openai"] == "kind" and left["whisper-1@openai"] == "kind"
    assert left["claude-sonnet-4-5@anthropic"] == "selector" and left["gpt-5-mini@openai"] == "selector"
    assert set(left.values()) <= RULES
    llama = body["candidates"][0]
    assert llama["wire"] == "openai_chat" and llama["offeringId"] and llama["region"] is None


def _check_real_call(momor: Any, fake: Any, request_id: str, first: dict[str, Any]) -> None:
    record = record_of(momor, request_id)
    assert record["served"]["model"] == first["model"] and record["served"]["provider"] == first["provider"]
    assert [a["provider"] for a in record["attempts"]] == [first["provider"]]
    assert [r.label for r in fake.requests()] == [first["provider"]]
    plan = record["plan"]
    assert plan["candidates"] == EXPECTED_CANDIDATES and "explain" not in plan
    assert plan["leftOut"]["ignore"] == 1 and plan["leftOut"]["deprecated"] == 1 and plan["leftOut"]["kind"] >= 2


def test_native_explains_then_serves_its_first_candidate(momor, fake):
    _deprecate_nano(momor)
    ask = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "one two three"}],
           "models": ["tier/low", "duo"], "prioritization": {"ignore": ["mistral"]}}
    explained = momor.post("/models", ask, headers=momor.headers(**EXPLAIN))
    assert explained.status_code == 200, explained.text
    body = explained.json()
    candidates = _check_explanation(momor, fake, body, "native")
    _check_reasons(body)
    explained_record = record_of(momor, explained.headers["x-momor-request-id"])
    assert explained_record["attempts"] == [] and explained_record["plan"]["explain"] is True
    served = momor.post("/models", ask)
    assert served.status_code == 200, served.text
    _check_real_call(momor, fake, served.headers["x-momor-request-id"], candidates[0])


def test_openai_sdk_explains_then_serves_its_first_candidate(momor, fake):
    _deprecate_nano(momor)
    routing = {"models": ["duo"], "provider": {"ignore": ["mistral"]}}
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="tier/low", messages=USER, max_tokens=50, extra_body=routing, extra_headers=EXPLAIN)
        body = raw.http_response.json()
        candidates = _check_explanation(momor, fake, body, "openai")
        _check_reasons(body)
        served = client.chat.completions.with_raw_response.create(
            model="tier/low", messages=USER, max_tokens=50, extra_body=routing)
    _check_real_call(momor, fake, served.headers["x-momor-request-id"], candidates[0])


def test_anthropic_sdk_explains_then_serves_its_first_candidate(momor, fake):
    _deprecate_nano(momor)
    routing = {"models": ["duo"], "provider": {"ignore": ["mistral"]}}
    with anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0) as client:
        raw = client.messages.with_raw_response.create(
            model="tier/low", messages=USER, max_tokens=50, extra_body=routing, extra_headers=EXPLAIN)
        body = raw.http_response.json()
        candidates = _check_explanation(momor, fake, body, "anthropic")
        _check_reasons(body)
        served = client.messages.with_raw_response.create(model="tier/low", messages=USER, max_tokens=50,
                                                          extra_body=routing)
    _check_real_call(momor, fake, served.headers["x-momor-request-id"], candidates[0])


def test_router_alias_explains_its_tier_and_families_then_serves_its_first_candidate(momor, fake, monkeypatch):
    """tier/medium on the router alias: the tier as asked, families zen, nvidia, puter; Zen's models
    of the tier first (in the random order a seeded source gives both calls alike)."""
    with openai.OpenAI(base_url=momor.url + "/router/v1", api_key=momor.api_key, max_retries=0) as client:
        monkeypatch.setattr(families, "RANDOM", random.Random(11))
        raw = client.chat.completions.with_raw_response.create(model="tier/medium", messages=USER,
                                                               extra_headers=EXPLAIN)
        body = raw.http_response.json()
        candidates = _check_explanation(momor, fake, body, "openai")
        assert body["router"]["route"] == "tier" and body["router"]["tier"] == "medium"
        assert body["router"]["tierSource"] == "asked"
        assert [f["name"] for f in body["router"]["families"]] == ["zen", "nvidia", "puter"]
        first_two = {f"{c['model']}@{c['provider']}" for c in candidates[:2]}
        assert first_two == {"deepseek-v4-flash@zen", "mimo-v2.5@zen"}
        monkeypatch.setattr(families, "RANDOM", random.Random(11))
        served = client.chat.completions.with_raw_response.create(model="tier/medium", messages=USER)
    record = record_of(momor, served.headers["x-momor-request-id"])
    assert (record["served"]["model"], record["served"]["provider"]) == (candidates[0]["model"],
                                                                        candidates[0]["provider"])
    assert record["plan"]["candidates"][:2] == [f"{c['model']}@{c['provider']}" for c in candidates[:2]]


def test_a_rule_registered_with_the_planner_explains_itself_with_no_other_code(momor, fake):
    """The planner's rules are the explanation's: a new one shows up under its own name, in the
    explanation and in a real call's record, with nothing written for it anywhere else."""
    def no_backup(candidate: planning.Candidate, scope: planning.Scope) -> str | None:
        return "backup is resting today" if candidate.provider.name == "backup" else None

    remove = planning.register(planning.Rule("restDay", no_backup))
    try:
        ask = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "hi"}], "model": "duo"}
        body = momor.post("/models", ask, headers=momor.headers(**EXPLAIN)).json()
        assert [f"{c['model']}@{c['provider']}" for c in body["candidates"]] == ["duo@flaky"]
        [rest] = [o for o in body["leftOut"] if o["rule"] == "restDay"]
        assert (rest["model"], rest["provider"], rest["why"]) == ("duo", "backup", "backup is resting today")
        assert fake.requests() == []
        served = momor.post("/models", ask)
        assert record_of(momor, served.headers["x-momor-request-id"])["plan"]["leftOut"]["restDay"] == 1
    finally:
        remove()


def test_zdr_leaves_out_offerings_without_a_covered_key(momor, fake):
    """Under zero data retention only a saved key marked zdr (anthropic's, in the harness) or a
    provider Momor's agreements cover serves: the others are left out by the zdr rule."""
    ask = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "hi"}],
           "models": ["claude-sonnet-4-5", "duo"], "prioritization": {"zdr": True}}
    body = momor.post("/models", ask, headers=momor.headers(**EXPLAIN)).json()
    assert body["zdr"] is True
    assert [f"{c['model']}@{c['provider']}" for c in body["candidates"]] == ["claude-sonnet-4-5@anthropic"]
    left = {f"{o['model']}@{o['provider']}": o["rule"] for o in body["leftOut"]}
    assert left["duo@flaky"] == "zdr" and left["duo@backup"] == "zdr"
    assert fake.requests() == []


def test_a_call_nothing_can_serve_is_explained_with_every_offering_left_out(momor, fake):
    ask = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "hi"}], "model": "tier/low",
           "prioritization": {"ignore": ["deepinfra", "mistral"], "maxAge": "P1D"}}
    explained = momor.post("/models", ask, headers=momor.headers(**EXPLAIN))
    assert explained.status_code == 200, explained.text
    body = explained.json()
    assert body["candidates"] == [] and body["refused"]["rule"] == "plan" and body["refused"]["status"] == 400
    assert {f"{o['model']}@{o['provider']}" for o in body["leftOut"]} == _every_offering(momor.catalog)
    rules = {o["rule"] for o in body["leftOut"]}
    assert "maxAge" in rules and "cutoff" not in rules  # maxAge replaces the cutoff
    refused = momor.post("/models", ask)
    assert refused.status_code == 400 and refused.json()["detail"] == body["refused"]["detail"]
    assert fake.requests() == []


@pytest.mark.parametrize(("path", "value"), [("/models", "maybe"), ("/v1/chat/completions", "2")])
def test_an_explain_switch_momor_cannot_read_is_refused_in_the_dialect(momor, fake, path, value):
    body = ({"systemPrompt": "x", "messages": [{"type": "user", "value": "hi"}]} if path == "/models"
            else {"model": "duo", "messages": USER})
    answer = httpx2.post(momor.url + path, json=body, headers=momor.headers(**{"X-Momor-Explain": value}), timeout=30)
    assert answer.status_code == 400
    detail = answer.json().get("detail") or answer.json()["error"]["message"]
    assert "x-momor-explain" in detail
    assert fake.requests() == []


def test_a_rate_limited_explanation_says_so_with_its_plan(momor, fake, monkeypatch):
    """Past the key's rate limit the real call would be refused (429) before any provider: the
    explanation answers the plan all the same, with refused.rule rateLimit."""
    from momor.config import reset_config
    from momor.store import ratelimit

    monkeypatch.setenv(ratelimit.LIMIT_ENV, "1")
    monkeypatch.setenv(ratelimit.WINDOW_ENV, "3600")
    reset_config()
    ratelimit.reset_local()
    try:
        ask = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "hi"}], "model": "duo"}
        first = momor.post("/models", ask, headers=momor.headers(**EXPLAIN)).json()
        assert first["refused"] is None
        second = momor.post("/models", ask, headers=momor.headers(**EXPLAIN))
        assert second.status_code == 200, second.text
        body = second.json()
        assert body["refused"]["rule"] == "rateLimit" and body["refused"]["status"] == 429
        assert [f"{c['model']}@{c['provider']}" for c in body["candidates"]] == ["duo@flaky", "duo@backup"]
        assert "x-should-retry" not in second.headers
        assert momor.post("/models", ask).status_code == 429
        assert fake.requests() == []
        # Reading records is rate limited too (in the key's `:api` bucket, api/route_limits.py), under the
        # same limit of 1: the record is read with the deployment's limit back.
        monkeypatch.delenv(ratelimit.LIMIT_ENV)
        reset_config()
        record = record_of(momor, second.headers["x-momor-request-id"])
        assert record["status"] == 200 and record["plan"]["refused"] == "rateLimit" and record["attempts"] == []
    finally:
        monkeypatch.undo()
        reset_config()
        ratelimit.reset_local()


def test_a_classified_router_route_is_explained_without_asking_the_classifier(momor, fake):
    """auto on the router alias: the tier would be the classifier's answer, a model call; explaining
    asks no model, names the classifier and plans the catalog's default tier."""
    with openai.OpenAI(base_url=momor.url + "/router/v1", api_key=momor.api_key, max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(model="auto", messages=USER, extra_headers=EXPLAIN)
    body = raw.http_response.json()
    router = body["router"]
    assert (router["route"], router["tier"], router["classifier"]) == ("auto", "medium", "llama-3.3-70b")
    assert router["tierSource"].startswith("default")
    assert body["candidates"][0]["tier"] == "medium"
    assert fake.requests() == []  # neither the classifier nor any candidate was asked


LEAD = ("zen", "nvidia")
"""Seed 003: auto checks Zen and NVIDIA first."""


@pytest.mark.parametrize("extra", [{}, {"tools": [{"type": "function", "function": {
    "name": "lookup", "parameters": {"type": "object", "properties": {}}}}]}], ids=["plain", "tools"])
@pytest.mark.parametrize("tier", ["low", "medium", "high"])
def test_auto_leads_with_zen_and_nvidia_within_the_tier_and_the_explanation_shows_it(momor, fake, tier, extra):
    """Within the classified tier the Zen and NVIDIA families lead and the other families stay behind
    them; the explanation's candidates are that order, family by family, as a real call tries them."""
    catalog = json.loads(json.dumps(momor.catalog))
    catalog["router"]["defaultTier"] = tier
    momor.write_catalog(catalog)
    with openai.OpenAI(base_url=momor.url + "/router/v1", api_key=momor.api_key, max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(model="auto", messages=USER, extra_headers=EXPLAIN,
                                                               **extra)
    body = raw.http_response.json()
    assert body["router"]["tier"] == tier
    in_tier = [c["provider"] for c in body["candidates"] if c["tier"] == tier]
    leading = [p for p in in_tier if p in LEAD]
    assert leading and in_tier[:len(leading)] == leading, in_tier
    assert [c["tier"] for c in body["candidates"]][:len(in_tier)] == [tier] * len(in_tier)
    assert [f["name"] for f in body["router"]["families"]][:2] == list(LEAD)
