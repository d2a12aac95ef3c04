"""The router alias (seed 003) end to end: the official openai SDK pointed at `<momor>/router/v1`,
Momor over HTTP with its memory in DynamoDB Local, and fake providers labelled zen, nvidia and
puter (OpenAI Chat wire; the fakes refuse any field the real API does not know, so a router field
that leaked to a provider fails the call).

What a later turn relies on is proved by what the fake provider received.
"""

from __future__ import annotations

import asyncio
import json
import time

import openai
import pytest

from momor.routing import memory
from momor.store import apikeys, keys
from tests.fakes.script import cut, fail, reply

from . import sdk_tool_loop
from .conftest import SAVED_KEYS

pytestmark = pytest.mark.emulators

ALL_PARAMS = ["maxTokens", "temperature", "topP", "toolUse", "stop", "seed"]
CLASSIFIER_ID = "classifier-mini-id"
ROUTER_KEYS = {**SAVED_KEYS, "zen": "sk-saved-zen-0007", "nvidia": "nvapi-saved-0008", "puter": "sk-saved-puter-0009"}


def _model(name, tier, offerings, max_output=32000):
    return {
        "name": name, "publisher": "momor", "tier": tier, "released": "2025-10-01",
        "capabilities": {"tools": True, "maxOutputTokens": max_output},
        "offerings": [{"provider": p, "id": f"{name}-{p}", "prices": {"input": price, "output": price}}
                      for p, price in offerings],
    }


def router_catalog(momor, fake_url):
    """The test catalog plus three families. The seed 001 providers (openai, anthropic, ...) are
    cheaper than nothing here but come after the families: families lead, price follows."""
    catalog = json.loads(json.dumps(momor.catalog))
    # The example catalog's own zen/nvidia/puter entries (their real wires and quirks, tested in
    # test_compat_providers.py) make way for plain Chat Completions fakes under the same names.
    families = {"zen", "nvidia", "puter"}
    catalog["providers"] = [p for p in catalog["providers"] if p["name"] not in families]
    catalog["models"] = [m for m in catalog["models"] if not {o["provider"] for o in m["offerings"]} & families]
    for name in ("zen", "nvidia", "puter"):
        catalog["providers"].append({"name": name, "wire": "openai_chat", "baseUrl": f"{fake_url}/{_label(name)}/v1",
                                     "parameters": ALL_PARAMS})
    catalog["models"] += [
        # The classifier's tier is one the router names too (checked when the catalog loads); it
        # costs a little, so the tier's cheaper zen-small serves first.
        {**_model("classifier-mini", "low", [("zen", 0.0)]),
         "offerings": [{"provider": "zen", "id": CLASSIFIER_ID, "prices": {"input": 0.01, "output": 0.01}}]},
        {**_model("zen-small", "low", [("zen", 0.0)]),
         "capabilities": {"maxOutputTokens": 32000, "reasoning": ["low", "medium", "high", "max"]}},
        _model("zen-medium", "medium", [("zen", 0.0), ("puter", 0.5)], max_output=1000),
        _model("nv-medium", "medium", [("nvidia", 0.0)]),
        _model("nv-large", "high", [("nvidia", 0.3), ("puter", 0.2)]),
        _model("puter-large", "high", [("puter", 0.1)]),
    ]
    catalog["router"] = {
        "classifier": {"model": "classifier-mini"},
        "tiers": ["low", "medium", "high"],
        "defaultTier": "medium",
    }
    return catalog


def _label(family: str | None) -> str | None:
    """The fake label serving a family here: a plain Chat Completions fake, not the strict
    per-provider dialect the names zen/nvidia/puter have in tests/fakes/dialects.py."""
    return None if family is None else f"{family}-family"


class _FamilyFakes:
    """The harness's fake, addressed by family name."""

    def __init__(self, fake):
        self._fake = fake

    def __getattr__(self, name):
        return getattr(self._fake, name)

    def requests(self, label=None):
        return self._fake.requests(_label(label))

    def script(self, label, *steps, **kwargs):
        return self._fake.script(_label(label), *steps, **kwargs)


@pytest.fixture
def fake(fake):
    return _FamilyFakes(fake)


@pytest.fixture
def router(momor, fake, momor_aws):
    momor.write_catalog(router_catalog(momor, fake.url))
    # Saved keys for the three families too (the secret is the test's own).
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret,
                                                        SecretString=json.dumps(ROUTER_KEYS))
    keys.reset_saved_keys()
    return momor


def sdk(momor, api_key=None):
    return openai.OpenAI(base_url=momor.url + "/router/v1", api_key=api_key or momor.api_key, max_retries=0)


def user(text):
    return {"role": "user", "content": text}


def stored_items(momor_aws, caller_id, chat_id):
    """A thread's items as the memory table holds them, oldest first (one per turn)."""
    answer = momor_aws.client("dynamodb").query(
        TableName=momor_aws.memory_table, KeyConditionExpression="threadKey = :k",
        ExpressionAttributeValues={":k": {"S": f"{caller_id}#{chat_id}"}}, ConsistentRead=True)
    return answer["Items"]


def sent_messages(fake, label, model_id=None):
    """The messages of the last generation request a family's fake received (not the classifier's)."""
    found = [r.json for r in fake.requests(label) if r.json and r.json.get("model") != CLASSIFIER_ID
             and (model_id is None or r.json.get("model") == model_id)]
    assert found, f"{label} received nothing"
    return found[-1]["messages"]


def served(momor, raw):
    """"provider/model" that served the call (its record), and the answer's model is the model's."""
    record = record_of(momor, raw.headers["x-momor-request-id"])
    assert raw.parse().model == f"momor/{record['served']['model']}"
    return f"{record['served']['provider']}/{record['served']['model']}"


def record_of(momor, request_id):
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    return momor.record(request_id)


# --- memory ------------------------------------------------------------------------------------


def test_three_turns_later_turns_rely_on_what_earlier_ones_said(router, fake):
    with sdk(router) as client:
        first = client.chat.completions.with_raw_response.create(
            model="zen-small", messages=[user("My name is Ada.")])
        assert first.parse().choices[0].message.content == "Echo: My name is Ada."
        default_thread = f"chat_default_{router.caller_id}"
        assert first.headers["x-momor-chat-id"] == default_thread
        assert first.parse().model_extra["chat_id"] == default_thread
        assert sent_messages(fake, "zen") == [user("My name is Ada.")]  # nothing remembered yet

        client.chat.completions.create(model="zen-small", messages=[user("I drink tea.")])
        assert sent_messages(fake, "zen") == [
            user("My name is Ada."), {"role": "assistant", "content": "Echo: My name is Ada."}, user("I drink tea."),
        ]

        third = client.chat.completions.create(
            model="zen-small", messages=[{"role": "system", "content": "Be brief."}, user("What is my name?")])
        assert third.choices[0].message.content == "Echo: What is my name?"
    # The instruction stays first, the thread follows in order, the new turn comes last.
    assert sent_messages(fake, "zen") == [
        {"role": "system", "content": "Be brief."},
        user("My name is Ada."), {"role": "assistant", "content": "Echo: My name is Ada."},
        user("I drink tea."), {"role": "assistant", "content": "Echo: I drink tea."},
        user("What is my name?"),
    ]
    # No router field ever reached a provider (the fake refuses unknown fields; checked here as well).
    for request in fake.requests("zen"):
        assert not {"chat_id", "context", "new_chat", "prompt"} & set(request.json)


def test_new_chat_then_continued_by_its_id(router, fake):
    with sdk(router) as client:
        client.chat.completions.create(model="zen-small", messages=[user("default thread turn")])
        started = client.chat.completions.with_raw_response.create(
            model="zen-small", messages=[user("A new topic.")], extra_body={"new_chat": True})
        chat_id = started.parse().model_extra["chat_id"]
        assert chat_id.startswith("chat_") and chat_id != f"chat_default_{router.caller_id}"
        assert started.headers["x-momor-chat-id"] == chat_id
        assert sent_messages(fake, "zen") == [user("A new topic.")]  # not the default thread's turn

        client.chat.completions.create(model="zen-small", messages=[user("Go on.")],
                                       extra_body={"thread_id": chat_id})
        assert sent_messages(fake, "zen") == [
            user("A new topic."), {"role": "assistant", "content": "Echo: A new topic."}, user("Go on."),
        ]


def test_new_chat_on_a_stream_carries_its_id_and_keeps_the_streamed_answer(router, fake):
    with sdk(router) as client:
        with client.chat.completions.with_streaming_response.create(
            model="zen-small", messages=[user("Stream me.")], stream=True, extra_body={"new_chat": True},
        ) as response:
            chat_id = response.headers["x-momor-chat-id"]
            text = "".join(c.choices[0].delta.content or "" for c in response.parse() if c.choices)
        assert text == "Echo: Stream me." and chat_id.startswith("chat_")
        client.chat.completions.create(model="zen-small", messages=[user("Again.")],
                                       extra_body={"chat_id": chat_id})
    assert sent_messages(fake, "zen") == [
        user("Stream me."), {"role": "assistant", "content": "Echo: Stream me."}, user("Again."),
    ]


def test_context_false_clears_the_thread(router, fake, momor_aws):
    with sdk(router) as client:
        client.chat.completions.create(model="zen-small", messages=[user("Remember this.")],
                                       extra_body={"chat_id": "c1"})
        client.chat.completions.create(model="zen-small", messages=[user("Forget it all.")],
                                       extra_body={"chat_id": "c1", "context": False})
        assert sent_messages(fake, "zen") == [user("Forget it all.")]
        assert stored_items(momor_aws, router.caller_id, "c1") == []  # deleted, not left to the TTL
        client.chat.completions.create(model="zen-small", messages=[user("Anything left?")],
                                       extra_body={"chat_id": "c1"})
        assert sent_messages(fake, "zen") == [user("Anything left?")]


def test_two_keys_never_see_each_others_threads(router, fake):
    other_key, _ = apikeys.create_api_key("second key")
    with sdk(router) as first, sdk(router, other_key) as second:
        first.chat.completions.create(model="zen-small", messages=[user("Secret of key one.")],
                                      extra_body={"chat_id": "shared-name"})
        first.chat.completions.create(model="zen-small", messages=[user("Default of key one.")])
        # The same chat id, and the default thread, name the second key's own (empty) threads.
        second.chat.completions.create(model="zen-small", messages=[user("Hello from two.")],
                                       extra_body={"chat_id": "shared-name"})
        assert sent_messages(fake, "zen") == [user("Hello from two.")]
        second.chat.completions.create(model="zen-small", messages=[user("Two's default.")])
        assert sent_messages(fake, "zen") == [user("Two's default.")]
        # ... and writing them changed nothing of the first key's.
        first.chat.completions.create(model="zen-small", messages=[user("Still mine?")],
                                      extra_body={"chat_id": "shared-name"})
    assert sent_messages(fake, "zen") == [
        user("Secret of key one."), {"role": "assistant", "content": "Echo: Secret of key one."}, user("Still mine?"),
    ]


WEATHER_TOOL = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_the_sdk_tool_loop_is_remembered_once(router, fake, momor_aws):
    """The SDK's tool loop resends [user, assistant(tool_calls), tool, ...] with the same chat id for
    three rounds with reasoning on (two tool rounds, then the answer; the second round's assistant
    turn also says something beside its call): the user turn is neither injected nor kept a second time, the
    provider reads each round exactly as the SDK sent it, and the thread holds the question, the
    text said beside the call and the final answer once each."""
    fake.script("zen", reply(tool_calls=[{"name": "weather", "arguments": {"city": "Paris"}}]),
                reply(text="Now Rome.", tool_calls=[{"name": "weather", "arguments": {"city": "Rome"}}]),
                reply(text="Paris is sunny, Rome is rainy."))
    question = user("Weather in Paris and Rome?")
    with sdk(router) as client:
        loop = sdk_tool_loop.run(client, [question], [WEATHER_TOOL], lambda name, args: f"{args['city']}: ok",
                                 rounds=3, model="zen-small", reasoning_effort="low",
                                 extra_body={"chat_id": "tools"})
        assert [len(answer.choices[0].message.tool_calls or []) for answer in loop.answers] == [1, 1, 0]
        assert all((a.choices[0].message.model_extra or {}).get("reasoning") for a in loop.answers)  # thinking on
        received = [r.json["messages"] for r in fake.requests("zen") if r.json and r.json.get("model") != CLASSIFIER_ID]
        assert len(received) == 3
        for sent in received:  # each round as the SDK sent it: one user turn, no memory before it
            assert sent[0] == question and [m["role"] for m in sent].count("user") == 1
        assert [m["role"] for m in received[2]] == ["user", "assistant", "tool", "assistant", "tool"]
        items = stored_items(momor_aws, router.caller_id, "tools")
        kept = [m for item in items for m in json.loads(item["messages"]["S"])]
        assert kept == [question, {"role": "assistant", "content": "Now Rome."},
                        {"role": "assistant", "content": "Paris is sunny, Rome is rainy."}]
        # The next turn, sent alone, reads the thread once.
        client.chat.completions.create(model="zen-small", messages=[user("And tomorrow?")],
                                       extra_body={"chat_id": "tools"})
        assert sent_messages(fake, "zen") == [*kept, user("And tomorrow?")]


def test_a_failed_call_keeps_nothing(router, fake):
    fake.script("zen", fail(400))
    with sdk(router) as client:
        with pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="zen-small", messages=[user("Lost words.")])
        client.chat.completions.create(model="zen-small", messages=[user("Next.")])
    assert sent_messages(fake, "zen") == [user("Next.")]


def test_a_stream_cut_after_output_keeps_nothing(router, fake):
    fake.script("zen", cut(after=2))
    response, frames = router.stream("/router/v1/chat/completions",
                                     {"model": "zen-small", "messages": [user("Half a story.")], "stream": True})
    assert response.status_code == 200
    assert frames[-1][1]["choices"][0]["finish_reason"] == "error"  # the stream failed after output
    with sdk(router) as client:
        client.chat.completions.create(model="zen-small", messages=[user("Next.")])
    assert sent_messages(fake, "zen") == [user("Next.")]


def test_prompt_is_a_shortcut_for_messages(router, fake):
    response = router.post("/router/chat/completions", {"model": "zen-small", "prompt": "Write a haiku."})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Echo: Write a haiku."
    assert sent_messages(fake, "zen") == [user("Write a haiku.")]


@pytest.mark.parametrize(("body", "param"), [
    ({"context": "sometimes"}, "context"),
    ({"context": 1}, "context"),
    ({"chat_id": 42}, "chat_id"),
    ({"conversation_id": "x" * 129}, "conversation_id"),
    ({"new_chat": "yes"}, "new_chat"),
    # Issue 20: a chat id is echoed in a header; outside its safe set it is refused before any provider.
    ({"chat_id": "тема-1"}, "chat_id"),
    ({"thread_id": "名前"}, "thread_id"),
    ({"memory_id": "a\r\nSet-Cookie: x=1"}, "memory_id"),
    ({"chat_id": "two words"}, "chat_id"),
])
def test_bad_memory_fields_are_400s_naming_the_field(router, fake, body, param):
    response = router.post("/router/v1/chat/completions", {"model": "zen-small", "messages": [user("hi")], **body})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["message"].startswith(param) and error["type"] == "invalid_request_error"
    assert fake.requests() == []


def test_the_v1_route_stays_stateless(router, fake):
    with openai.OpenAI(base_url=router.url + "/v1", api_key=router.api_key, max_retries=0) as client:
        client.chat.completions.create(model="zen-small", messages=[user("one")])
        client.chat.completions.create(model="zen-small", messages=[user("two")])
        with pytest.raises(openai.BadRequestError):  # seed 001: no model is a refusal there
            client.chat.completions.create(model=None, messages=[user("three")])  # type: ignore[arg-type]
    assert sent_messages(fake, "zen") == [user("two")]


# --- routing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["auto", None, "no-such-model", "router"])
def test_auto_routing_classifies_then_serves_the_tier_in_family_order(router, fake, model):
    fake.script("zen", reply("high"), model=CLASSIFIER_ID)
    with sdk(router) as client:
        raw = client.chat.completions.with_raw_response.create(
            model=openai.omit if model is None else model, messages=[user("Prove the four colour theorem.")])
    assert raw.headers["x-momor-tier"] == "high"
    # zen has no high model: nvidia's comes first, though puter serves it (and puter-large) cheaper.
    assert served(router, raw) == "nvidia/nv-large"
    classifier = [r.json for r in fake.requests("zen") if r.json["model"] == CLASSIFIER_ID][-1]
    assert classifier["max_completion_tokens"] == 16 and classifier["temperature"] == 0
    assert classifier["messages"][-1] == user("Prove the four colour theorem.")
    record = record_of(router, raw.headers["x-momor-request-id"])
    assert record["router"]["tier"] == "high" and record["router"]["tierSource"] == "classifier"
    assert [a["model"] for a in record["router"]["classifier"]] == ["classifier-mini"]
    assert record["router"]["classifier"][0]["status"] == "ok"
    assert record["served"] == {"model": "nv-large", "provider": "nvidia", "tier": "high", "publisher": "momor"}


def test_the_tier_is_served_family_by_family(router, fake):
    fake.script("zen", reply("medium"), model=CLASSIFIER_ID)
    fake.script("zen", fail(400), model="zen-medium-zen")
    fake.script("nvidia", fail(400))
    with sdk(router) as client:
        raw = client.chat.completions.with_raw_response.create(model="auto", messages=[user("Explain DNS.")])
    assert served(router, raw) == "puter/zen-medium"
    record = record_of(router, raw.headers["x-momor-request-id"])
    assert [(a["provider"], a["model"]) for a in record["attempts"]] == [
        ("zen", "zen-medium"), ("nvidia", "nv-medium"), ("puter", "zen-medium")]


def test_a_call_without_a_temperature_sends_none(router, fake):
    """Issue 22: the router sends a temperature to its classifier, never to the answer's provider
    unless the caller set one (the provider's own default holds)."""
    fake.script("zen", reply("medium"), model=CLASSIFIER_ID)
    with sdk(router) as client:
        client.chat.completions.create(model="auto", messages=[user("Explain DNS.")])
        answer = [r.json for r in fake.requests("zen") if r.json and r.json.get("model") != CLASSIFIER_ID][-1]
        assert "temperature" not in answer and "top_p" not in answer
        client.chat.completions.create(model="zen-medium", messages=[user("Explain DNS.")], temperature=0.3)
        answer = [r.json for r in fake.requests("zen") if r.json and r.json.get("model") != CLASSIFIER_ID][-1]
        assert answer["temperature"] == 0.3


@pytest.mark.parametrize("answer", ["", "I think it is complicated", "ultra"])
def test_a_classifier_answering_nonsense_serves_the_default_tier(router, fake, answer):
    fake.script("zen", reply(answer), model=CLASSIFIER_ID)
    with sdk(router) as client:
        raw = client.chat.completions.with_raw_response.create(model="auto", messages=[user("Hi")])
    assert raw.headers["x-momor-tier"] == "medium" and served(router, raw) == "zen/zen-medium"
    record = record_of(router, raw.headers["x-momor-request-id"])
    assert record["router"]["tierSource"] == "default" and record["router"]["tierNote"]


def test_a_failing_classifier_does_not_fail_the_call(router, fake):
    fake.script("zen", fail(401), model=CLASSIFIER_ID)
    with sdk(router) as client:
        raw = client.chat.completions.with_raw_response.create(model="auto", messages=[user("Hi")])
    assert raw.headers["x-momor-tier"] == "medium" and served(router, raw) == "zen/zen-medium"
    record = record_of(router, raw.headers["x-momor-request-id"])
    assert record["router"]["tierSource"] == "default" and "classifier failed" in record["router"]["tierNote"]
    assert record["router"]["classifier"][0]["status"] == "failed"
    assert record["status"] == 200


@pytest.mark.parametrize(("model", "expected"), [
    ("nvidia", "nvidia/nv-medium"), ("nvidia-auto", "nvidia/nv-medium"), ("puter", "puter/zen-medium"),
    ("zen-auto", "zen/zen-medium"),
])
def test_a_family_can_be_forced(router, fake, model, expected):
    fake.script("zen", reply("medium"), model=CLASSIFIER_ID)
    with sdk(router) as client:
        raw = client.chat.completions.with_raw_response.create(model=model, messages=[user("Hi")])
    assert served(router, raw) == expected and raw.headers["x-momor-tier"] == "medium"


def test_forced_nvidia_falls_back_to_puter_and_puter_to_nothing_else(router, fake):
    fake.script("zen", reply("medium"), reply("medium"), model=CLASSIFIER_ID)
    fake.script("nvidia", *[fail(400)] * 2)
    with sdk(router) as client:
        raw = client.chat.completions.with_raw_response.create(model="nvidia", messages=[user("Hi")])
        assert served(router, raw).startswith("puter/")
        before = len(fake.requests())
        fake.script("puter", *[fail(400)] * 3)
        with pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="puter", messages=[user("Hi")])
    # Puter stood alone: after its three offerings failed, nothing of zen's or nvidia's was tried.
    after = [r for r in fake.requests()[before:] if r.json.get("model") != CLASSIFIER_ID]
    assert {r.label for r in after} == {_label("puter")} and len(after) == 3


def test_an_exact_model_is_served_by_its_offerings_in_family_order(router, fake):
    # nv-large: nvidia (family 2) before puter (family 3), though puter's is cheaper.
    with sdk(router) as client:
        raw = client.chat.completions.with_raw_response.create(model="nv-large", messages=[user("Hi")])
    assert served(router, raw) == "nvidia/nv-large" and "x-momor-tier" not in raw.headers
    assert [r.json["model"] for r in fake.requests()] == ["nv-large-nvidia"]  # no classifier for a named model


def test_default_max_tokens_whole_streamed_capped_and_the_clients_own(router, fake):
    with sdk(router) as client:
        client.chat.completions.create(model="zen-small", messages=[user("a")])
        assert fake.requests("zen")[-1].json["max_completion_tokens"] == 2048
        list(client.chat.completions.create(model="zen-small", messages=[user("b")], stream=True))
        assert fake.requests("zen")[-1].json["max_completion_tokens"] == 4096
        client.chat.completions.create(model="zen-medium", messages=[user("c")])  # maxOutputTokens 1000
        assert fake.requests("zen")[-1].json["max_completion_tokens"] == 1000
        client.chat.completions.create(model="zen-small", messages=[user("d")], max_tokens=7)
        assert fake.requests("zen")[-1].json["max_completion_tokens"] == 7


@pytest.mark.parametrize(("model", "extra", "effort"), [
    ("zen-small:max", {}, "max"), ("zen-small:low", {}, "low"),
    ("zen-small:max", {"reasoning_effort": "medium"}, "medium"),  # the caller's own value wins
])
def test_a_zen_variant_is_a_reasoning_depth(router, fake, model, extra, effort):
    with sdk(router) as client:
        client.chat.completions.create(model=model, messages=[user("Think.")], extra_body=extra)
    sent = fake.requests("zen")[-1].json
    assert sent["model"] == "zen-small-zen" and sent["reasoning_effort"] == effort


def test_a_thread_survives_across_instances(router, fake):
    """Two Momor processes' worth of state (a second app and server, nothing shared in memory):
    the turn kept by one is what the other injects."""
    from momor.app import all_routes

    from .conftest import _Server

    with sdk(router) as client:
        client.chat.completions.create(model="zen-small", messages=[user("Kept by the first.")],
                                       extra_body={"chat_id": "travels"})
    with _Server(all_routes()) as other:
        with openai.OpenAI(base_url=other.url + "/router/v1", api_key=router.api_key, max_retries=0) as client:
            client.chat.completions.create(model="zen-small", messages=[user("Read by the second.")],
                                           extra_body={"chat_id": "travels"})
        other.settle()
    assert sent_messages(fake, "zen") == [
        user("Kept by the first."), {"role": "assistant", "content": "Echo: Kept by the first."},
        user("Read by the second."),
    ]


async def test_concurrent_turns_on_one_thread_are_both_kept(router):
    """One item per turn, each under its own time-ordered unique id: two turns written at once on
    one thread both land, in some order, and neither reads or rewrites the other."""
    from momor.store import memory as store

    await asyncio.gather(*(store.append(router.caller_id, "busy", [user(f"turn {i}")]) for i in range(8)))
    thread = await store.load(router.caller_id, "busy", 40)
    assert sorted(t["content"] for t in thread.turns) == [f"turn {i}" for i in range(8)]
    await store.append(router.caller_id, "busy", [user("last")])
    assert (await store.load(router.caller_id, "busy", 40)).turns[-1] == user("last")  # time-ordered
    await store.clear(router.caller_id, "busy")
    assert (await store.load(router.caller_id, "busy", 40)).turns == []


def test_a_classified_stream_names_its_tier_and_thread(router, fake):
    fake.script("zen", reply("low"), model=CLASSIFIER_ID)
    with sdk(router) as client, client.chat.completions.with_streaming_response.create(
        model="auto", messages=[user("Say hi.")], stream=True,
    ) as response:
        assert response.headers["x-momor-tier"] == "low"
        assert response.headers["x-momor-chat-id"] == f"chat_default_{router.caller_id}"
        assert response.headers["x-momor-provider"] == "zen"
        chunks = list(response.parse())
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: Say hi."
    assert chunks[-1].model == "momor/zen-small"


def test_compact_and_full_memory_bounds_and_only_conversation_is_stored(router, fake, momor_aws):
    with sdk(router) as client:
        for i in range(6):  # six exchanges: twelve messages
            client.chat.completions.create(
                model="zen-small", extra_body={"chat_id": "long"},
                messages=[{"role": "system", "content": "rules"}, user(f"q{i}")])
        client.chat.completions.create(model="zen-small", messages=[user("compact?")], extra_body={"chat_id": "long"})
        compact = sent_messages(fake, "zen")
        client.chat.completions.create(model="zen-small", messages=[user("full?")],
                                       extra_body={"chat_id": "long", "context": "full"})
        full = sent_messages(fake, "zen")
    # Compact: the last 8 messages (4 exchanges) before the new turn; full: everything (14 so far).
    assert compact[:-1] == [m for i in range(2, 6) for m in (user(f"q{i}"), {"role": "assistant",
                                                                            "content": f"Echo: q{i}"})]
    assert [m["content"] for m in full[:-1]][:2] == ["q0", "Echo: q0"] and len(full) == 15
    items = stored_items(momor_aws, router.caller_id, "long")
    assert len(items) == 8  # one item per turn
    stored = [m for item in items for m in json.loads(item["messages"]["S"])]
    assert {m["role"] for m in stored} == {"user", "assistant"} and len(stored) == 16  # no system message kept


# --- memory's cost: one item per turn, read by the window -----------------------------------------

SHORT_QUESTION = "What is the capital of France, in one line?"
SHORT_ANSWER = "The capital of France is Paris, on the Seine; it has been the capital since the 10th century."


async def test_a_turns_store_cost_does_not_grow_with_the_thread(router):
    """DynamoDB Local's ConsumedCapacity (ReturnConsumedCapacity TOTAL) for the same short exchange
    at every thread length: the write is the turn's own item, the compact read the recent window."""
    from momor.store import memory as store

    exchange = [user(SHORT_QUESTION), {"role": "assistant", "content": SHORT_ANSWER}]
    writes, reads = {}, {}
    for n in range(1, 101):
        reads[n] = (await store.load(router.caller_id, "costly", memory.BOUNDS["auto"].messages)).read_units
        writes[n] = await store.append(router.caller_id, "costly", exchange)
    print(f"\nmemory cost per short turn: writes {[writes[n] for n in (1, 10, 100)]}, "
          f"compact reads {[reads[n] for n in (1, 10, 100)]}")
    assert writes[1] == writes[2] == writes[10] == writes[100] == 1.0
    assert reads[5] == reads[10] == reads[100]  # from the fifth turn on, the window is full
    full = await store.load(router.caller_id, "costly", memory.BOUNDS["full"].messages)
    assert len(full.turns) == 40 and full.turns[-2:] == exchange
    assert full.read_units == (await store.load(router.caller_id, "costly", 40)).read_units
    horizon = await store.load(router.caller_id, "costly", store.HORIZON_MESSAGES)
    print(f"full read {full.read_units}, horizon read {horizon.read_units}")


async def test_reading_on_continues_where_the_window_stopped(router):
    """A read that pages further back (a caller resending more than the window) gets exactly the
    newest messages asked for, in order, as one longer read would; never past the horizon."""
    from momor.store import memory as store

    said = []
    for i in range(40):  # items of one and of two messages, so a page can stop inside what it read
        new = [user(f"q{i}")] if i % 3 == 0 else [user(f"q{i}"), {"role": "assistant", "content": f"a{i}"}]
        await store.append(router.caller_id, "paged", new)
        said += new
    window = await store.load(router.caller_id, "paged", 8)
    assert window.turns == said[-len(window.turns):] and 8 <= len(window.turns) <= 9 and window.more is not None
    on = await store.load(router.caller_id, "paged", 30, window)
    assert on.turns == said[-len(on.turns):] and 30 <= len(on.turns) <= 31
    everything = await store.load(router.caller_id, "paged", 1000, on)
    assert everything.turns == said[-store.HORIZON_MESSAGES:] and everything.more is None


async def test_each_turn_expires_memory_ttl_days_after_it_was_said(router, momor_aws, monkeypatch):
    """MOMOR_MEMORY_TTL_DAYS sets each turn's expiresAt; a turn past it is never read again, even
    while DynamoDB's TTL sweep (which can take days) has not deleted it yet."""
    from momor.config import reset_config
    from momor.store import memory as store

    with monkeypatch.context() as env:
        env.setenv("MOMOR_MEMORY_TTL_DAYS", "7")
        reset_config()
        await store.append(router.caller_id, "ttl", [user("kept a week")])
    reset_config()
    [item] = stored_items(momor_aws, router.caller_id, "ttl")
    assert abs(int(item["expiresAt"]["N"]) - (time.time() + 7 * 86_400)) < 60
    # The same turn, expired a second ago but still in the table: the thread reads as empty of it.
    momor_aws.client("dynamodb").put_item(TableName=momor_aws.memory_table,
                                          Item={**item, "expiresAt": {"N": str(int(time.time()) - 1)}})
    await store.append(router.caller_id, "ttl", [user("fresh")])
    assert (await store.load(router.caller_id, "ttl", 8)).turns == [user("fresh")]


def test_the_sdk_lists_models_at_the_router_base_url(router):
    """`models.list()` and `models.retrieve(id)` with base URL `<momor>/router/v1` (seed 003's SDK
    setup) answer as at `/v1`; an unknown id is the SDK's NotFoundError."""
    with sdk(router) as client, openai.OpenAI(base_url=router.url + "/v1", api_key=router.api_key,
                                              max_retries=0) as plain:
        listed = [m.id for m in client.models.list()]
        assert listed and listed == [m.id for m in plain.models.list()]
        assert client.models.retrieve(listed[0]).id == listed[0]
        with pytest.raises(openai.NotFoundError):
            client.models.retrieve("momor/no-such-model")
