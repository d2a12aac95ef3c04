"""The router alias (seed 003) as a user gets it out of the box (issue 22): the SHIPPED catalogs
(infra/example-catalog.json, which infra/dev.sh serves, and example-catalog.real.json with its base
URLs pointed at the fakes) with their own router settings, over HTTP, through the official openai
SDK at `<momor>/router/v1`. The fakes are the strict per-provider dialects of tests/fakes (Zen's
reasoning variants, NVIDIA's temperature floor, Puter's driver call).

The shipped classifier (llama-3.3-70b on DeepInfra in the dev catalog; mistral-small, a small
model that does not reason, in the real one) is the fake, which answers "Echo: <prompt>": the tier
it names is the first tier word of the prompt, or none (the default tier, medium).
"""

from __future__ import annotations

import json
import random
import re
import time

import openai
import pytest

from momor.routing import families
from tests.docs_text import documentation

from .conftest import ROOT

pytestmark = pytest.mark.emulators

REAL_CATALOG = ROOT / "infra" / "example-catalog.real.json"
SEED_ZEN = {  # seed 003's Zen table: name -> variants
    "deepseek-v4-flash-free": ["low", "medium", "high", "max"], "mimo-v2.5-free": ["low", "medium", "high"],
    "big-pickle": [], "laguna-s-2.1-free": ["low", "medium", "high"],
    "nemotron-3-ultra-free": ["low", "medium", "high"], "north-mini-code-free": ["none", "high"],
}
FAKED = ("zen", "nvidia", "puter", "mistral", "anthropic")
"""The real catalog's providers the router reaches here, pointed at the fake of the same label."""


def _real_catalog_on_fakes(fake_url):
    catalog = json.loads(REAL_CATALOG.read_text())
    for provider in catalog["providers"]:
        if provider["name"] in FAKED:
            suffix = "/v1" if provider["wire"] == "openai_chat" else ""
            provider["baseUrl"] = f"{fake_url}/{provider['name']}{suffix}"
    return catalog


@pytest.fixture(params=["example-catalog.json", "example-catalog.real.json"])
def shipped(request, momor, fake):
    """Momor serving a shipped catalog (the dev one is the harness's own, plus two test models)."""
    if request.param == "example-catalog.real.json":
        momor.write_catalog(_real_catalog_on_fakes(fake.url))
    return momor


@pytest.fixture
def client(shipped):
    with openai.OpenAI(base_url=shipped.url + "/router/v1", api_key=shipped.api_key, max_retries=0) as sdk:
        yield sdk


def user(text):
    return {"role": "user", "content": text}


def record_of(momor, request_id):
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    return momor.record(request_id)


def served(momor, raw):
    record = record_of(momor, raw.headers["x-momor-request-id"])
    return record["served"]


def zen_sent(fake):
    """The last Chat Completions body the Zen fake received."""
    return [r.json for r in fake.requests("zen") if r.json][-1]


# --- every route of the seed reaches its family ------------------------------------------------


@pytest.mark.parametrize(("model", "family"), [
    ("zen", "zen"), ("zen-auto", "zen"), ("nvidia", "nvidia"), ("nvidia-auto", "nvidia"), ("puter", "puter"),
    ("puter-auto", "puter"), ("auto", "zen"), ("router", "zen"),
])
def test_each_family_route_is_served_by_its_family(shipped, client, fake, model, family):
    raw = client.chat.completions.with_raw_response.create(model=model, messages=[user("Say hi.")])
    assert raw.parse().choices[0].message.content
    assert raw.headers["x-momor-tier"] == "medium"  # the classifier named no tier: the default
    assert served(shipped, raw)["provider"] == family


@pytest.mark.parametrize("zen_id", list(SEED_ZEN))
def test_each_seed_zen_name_is_an_exact_model(shipped, client, fake, zen_id):
    raw = client.chat.completions.with_raw_response.create(model=zen_id, messages=[user("Say hi.")])
    assert raw.parse().choices[0].message.content and "x-momor-tier" not in raw.headers
    assert served(shipped, raw)["provider"] == "zen" and zen_sent(fake)["model"] == zen_id
    for variant in SEED_ZEN[zen_id]:  # the Zen fake refuses a variant its model does not take
        client.chat.completions.create(model=f"{zen_id}:{variant}", messages=[user("Think.")])
        assert zen_sent(fake)["model"] == zen_id and zen_sent(fake)["reasoning_effort"] == variant


def readme_zen_variants():
    """The router table's `<model>:<variant>` row of the README: Zen id -> the variants it says it takes."""
    lines = documentation().splitlines()
    row = next(line for line in lines if line.startswith("| `<model>:<variant>`"))
    found = re.findall(r"`([a-z0-9.-]+)`: (no variants|[a-z]+(?:/[a-z]+)*)", row)
    return {name: [] if said == "no variants" else said.split("/") for name, said in found}


def test_the_readmes_zen_variants_are_the_seeds_and_each_is_served(shipped, client, fake):
    """What the README lists is what seed 003 lists and what is served: each variant reaches its
    model as its reasoning_effort; a model listed with no variants takes none (`big-pickle:none` names
    no model: routed as auto, never sent as big-pickle with a depth it does not take)."""
    listed = readme_zen_variants()
    assert listed == SEED_ZEN
    for zen_id, variants in listed.items():
        for variant in variants:
            client.chat.completions.create(model=f"{zen_id}:{variant}", messages=[user("Think.")])
            assert zen_sent(fake)["model"] == zen_id and zen_sent(fake)["reasoning_effort"] == variant
        if not variants:
            raw = client.chat.completions.with_raw_response.create(model=f"{zen_id}:none", messages=[user("Hi.")])
            assert raw.headers["x-momor-tier"] == "medium"  # auto: classified, the default tier
            assert record_of(shipped, raw.headers["x-momor-request-id"])["router"]["route"] == "auto"


@pytest.mark.parametrize("tier", ["low", "medium", "high"])
def test_auto_serves_the_classified_tier_from_zen_first(shipped, client, tier):
    raw = client.chat.completions.with_raw_response.create(
        model="auto", messages=[user(f"This one is a {tier} question.")])
    assert raw.headers["x-momor-tier"] == tier
    record = record_of(shipped, raw.headers["x-momor-request-id"])
    assert (record["served"]["provider"], record["served"]["tier"]) == ("zen", tier)
    assert record["router"]["tierSource"] == "classifier"


def test_zen_picks_a_random_zen_model_of_the_tier_repeatably(shipped, client, monkeypatch):
    def pick(seed):
        monkeypatch.setattr(families, "RANDOM", random.Random(seed))
        raw = client.chat.completions.with_raw_response.create(model="zen", messages=[user("A high one.")])
        found = served(shipped, raw)
        assert (found["provider"], found["tier"]) == ("zen", "high")
        return found["model"]

    picks = {seed: pick(seed) for seed in range(8)}
    assert set(picks.values()) == {"big-pickle", "nemotron-3-ultra"}  # the tier's models, not the cheapest alone
    assert pick(3) == picks[3]  # a seeded source repeats its pick


# --- lenient where the seed is lenient -------------------------------------------------------------


def test_an_unknown_role_goes_as_written_on_chat_completions_and_is_read_elsewhere(shipped, fake):
    messages = [{"role": "human", "content": "Hi from a human."}, {"role": "model", "content": "Hello."},
                user("And now?")]
    # Chat Completions (Zen): the roles go as written; the provider's own verdict is the answer.
    shipped.post("/router/v1/chat/completions", {"model": "big-pickle", "messages": messages, "chat_id": "roles"})
    assert [m["role"] for m in zen_sent(fake)["messages"]] == ["human", "model", "user"]
    # Anthropic: read as a user and an assistant message.
    response = shipped.post("/router/v1/chat/completions", {"model": "claude-sonnet-4-5", "messages": messages,
                                                            "chat_id": "roles-2"})
    assert response.status_code == 200, response.text
    sent = [r.json for r in fake.requests("anthropic") if r.json][-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "Hi from a human." in json.dumps(sent[0]) and "Hello." in json.dumps(sent[1])
    # Never kept as a turn: the next call on the thread carries only the user turn and the answer.
    shipped.post("/router/v1/chat/completions", {"model": "big-pickle", "messages": [user("Next.")],
                                                 "chat_id": "roles-2"})
    assert zen_sent(fake)["messages"] == [user("And now?"), {"role": "assistant",
                                                             "content": response.json()["choices"][0]["message"]
                                                             ["content"]}, user("Next.")]


def test_null_memory_fields_mean_not_given(shipped, fake):
    body = {"model": "big-pickle", "messages": [user("Hi.")], "context": None, "new_chat": None, "chat_id": None,
            "conversation_id": None, "thread_id": None, "memory_id": None}
    response = shipped.post("/router/v1/chat/completions", body)
    assert response.status_code == 200, response.text
    assert response.json()["chat_id"] == f"chat_default_{shipped.caller_id}"


def test_new_chat_with_a_chat_id_starts_a_new_chat_named_in_the_answer_and_the_stream(shipped, client, fake):
    client.chat.completions.create(model="big-pickle", messages=[user("Old thread.")], extra_body={"chat_id": "old"})
    raw = client.chat.completions.with_raw_response.create(
        model="big-pickle", messages=[user("Fresh.")], extra_body={"chat_id": "old", "new_chat": True})
    chat_id = raw.parse().model_extra["chat_id"]
    assert chat_id.startswith("chat_") and chat_id != "old" and raw.headers["x-momor-chat-id"] == chat_id
    assert zen_sent(fake)["messages"] == [user("Fresh.")]  # not the old thread's turns
    with client.chat.completions.with_streaming_response.create(
        model="big-pickle", messages=[user("Stream.")], stream=True, extra_body={"chat_id": "old", "new_chat": True},
    ) as response:
        chunks = list(response.parse())
        header = response.headers["x-momor-chat-id"]
    assert chunks[0].model_extra["chat_id"] == header != chat_id
    assert all("chat_id" not in (c.model_extra or {}) for c in chunks[1:])


def test_a_translated_stream_names_its_chat_on_the_first_chunk(shipped, fake):
    response, frames = shipped.stream("/router/v1/chat/completions", {
        "model": "claude-sonnet-4-5", "messages": [user("Stream.")], "stream": True, "chat_id": "named"})
    assert response.status_code == 200 and frames[0][1]["chat_id"] == "named"


# --- memory ---------------------------------------------------------------------------------------


def test_the_sdk_loop_resending_the_conversation_is_remembered_once(shipped, client, fake, momor_aws):
    conversation = [{"role": "system", "content": "Be brief."}]
    for question in ("My name is Ada.", "I drink tea.", "What is my name?"):
        conversation.append(user(question))
        answer = client.chat.completions.create(model="big-pickle", messages=conversation,
                                                extra_body={"chat_id": "loop"})
        # What the model read is the conversation, each turn once: no memory injected again.
        assert zen_sent(fake)["messages"] == conversation
        conversation.append({"role": "assistant", "content": answer.choices[0].message.content})
    items = momor_aws.client("dynamodb").query(
        TableName=momor_aws.memory_table, KeyConditionExpression="threadKey = :k",
        ExpressionAttributeValues={":k": {"S": f"{shipped.caller_id}#loop"}}, ConsistentRead=True)["Items"]
    # One item per turn, each holding only what that turn added (its question and answer).
    assert [json.loads(item["messages"]["S"]) for item in items] == [conversation[i:i + 2] for i in (1, 3, 5)]
    # A caller that sends only its new turn still gets the thread.
    client.chat.completions.create(model="big-pickle", messages=[user("And my drink?")], extra_body={"chat_id": "loop"})
    assert zen_sent(fake)["messages"] == [*conversation[1:], user("And my drink?")]


def test_one_big_turn_does_not_cost_the_thread_its_history(shipped, client, fake):
    first = [user("Remember: the code is 4711."), user("And the colour is teal.")]
    for message in first:
        client.chat.completions.create(model="big-pickle", messages=[message], extra_body={"chat_id": "big"})
    client.chat.completions.create(model="big-pickle", messages=[user("data " * 80_000)],  # 400 KB
                                   extra_body={"chat_id": "big"})
    client.chat.completions.create(model="big-pickle", messages=[user("What was the code?")],
                                   extra_body={"chat_id": "big", "context": "full"})
    sent = zen_sent(fake)["messages"]
    texts = [m["content"] for m in sent]
    assert texts[0] == "Remember: the code is 4711." and texts[2] == "And the colour is teal."
    assert texts[4].startswith("data data") and "[Momor memory: this turn was" in texts[4]
    assert len(texts[4]) < 40_000 and texts[-1] == "What was the code?"


# --- infra/dev.sh's own server: infra.local with the example catalog and the bundled fake --------


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dev_server(aws):
    """`python -m infra.local` as infra/dev.sh runs it (after setup.sh), on free ports, with the
    session's emulators as its AWS (so it starts none of its own)."""
    import os
    import subprocess
    import sys
    import urllib.request

    port, fake_port = _free_port(), _free_port()
    env = {**os.environ, **aws.env()}
    env.pop("MOMOR_CATALOG_FILE", None)
    proc = subprocess.Popen([sys.executable, "-m", "infra.local", "--port", str(port), "--fake-port", str(fake_port),
                             "--api-key", "dev-key"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/router/v1/chat/completions", timeout=1)
            except urllib.error.HTTPError:
                break  # it answers (a GET is refused): the server is up
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "infra.local did not start"
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(15)


def test_the_dev_server_serves_the_router_alias_out_of_the_box(dev_server):
    with openai.OpenAI(base_url=dev_server + "/router/v1", api_key="dev-key", max_retries=0) as sdk:
        for model, family in [("zen", "zen"), ("nvidia-auto", "nvidia"), ("puter", "puter"), ("auto", "zen"),
                              *((name, "zen") for name in SEED_ZEN)]:
            raw = sdk.chat.completions.with_raw_response.create(model=model, messages=[user("Hello there.")])
            assert raw.http_response.status_code == 200 and raw.parse().choices[0].message.content, model
            assert _served_by(dev_server, raw.headers["x-momor-request-id"]) == family, model


def _served_by(url, request_id):
    import httpx2

    deadline = time.monotonic() + 10
    while True:
        response = httpx2.get(f"{url}/generations/{request_id}", headers={"Authorization": "Bearer dev-key"})
        if response.status_code == 200 or time.monotonic() > deadline:
            assert response.status_code == 200, response.text
            return response.json()["served"]["provider"]
        time.sleep(0.1)
