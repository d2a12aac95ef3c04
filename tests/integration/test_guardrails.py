"""Guardrails over HTTP (issue 39), on each dialect, buffered and streamed: a card number and an
e-mail in a prompt never reach the strict fake provider (it is sent placeholders) and come back
restored in the answer (the fake echoes what it was sent); a blocked input is refused in the dialect's
error shape before any provider is asked; an output block ends a stream with the dialect's error
frame; the record carries verdicts and never a value; the key API sets a key's checks on top of its
organization's and refuses a bad policy with a 400."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx2
import pytest

from momor.guardrails.policy import parse
from momor.store import apikeys, aws, organizations
from tests.fakes.script import reply

pytestmark = pytest.mark.emulators

CARD = "4111 1111 1111 1111"
EMAIL = "jane.doe@example.com"
PROMPT = f"My card is {CARD} and my mail is {EMAIL}; mail {EMAIL} the receipt."
MASK = {"input": [{"check": "pii", "action": "mask", "restore": True, "entities": ["card", "email"]}]}
BLOCK = {"input": [{"check": "denylist", "action": "block", "words": ["project falcon"], "name": "codenames"}]}
MODELS = [("gpt-5-mini", "openai"), ("claude-sonnet-4-5", "anthropic")]


def org_policy(policy: dict[str, Any]) -> None:
    organizations.ensure_default()
    organizations.set_guardrails(organizations.DEFAULT_ORG, parse(policy, origin="organization"))


def ask(dialect: str, model: str, text: str, *, stream: bool) -> tuple[str, dict[str, Any]]:
    """The path and body of one call in `dialect`."""
    if dialect == "native":
        return "/models", {"systemPrompt": "", "messages": [{"type": "user", "value": text}], "model": model,
                           "streaming": stream}
    if dialect == "openai":
        return "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": text}],
                                        "stream": stream}
    return "/v1/messages", {"model": model, "max_tokens": 200, "messages": [{"role": "user", "content": text}],
                            "stream": stream}


def answer_text(dialect: str, body: dict[str, Any]) -> str:
    if dialect == "native":
        return "".join(m["value"] for m in body["messages"] if m["type"] == "content")
    if dialect == "openai":
        return body["choices"][0]["message"]["content"]
    return "".join(b["text"] for b in body["content"] if b["type"] == "text")


def streamed_text(dialect: str, frames: list[tuple[str, Any]]) -> str:
    if dialect == "native":
        return "".join(d["value"] for e, d in frames if e == "delta")
    if dialect == "openai":
        return "".join(d["choices"][0]["delta"].get("content") or "" for _, d in frames
                       if d != "[DONE]" and d.get("choices"))
    return "".join(d["delta"].get("text", "") for e, d in frames if e == "content_block_delta")


def record_of(momor: Any, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    return momor.record(request_id)


def sent_to(fake: Any, provider: str) -> str:
    requests = fake.requests(provider)
    assert requests, f"{provider} was not asked"
    return json.dumps([r.json for r in requests])


@pytest.mark.parametrize("dialect", ["native", "openai", "anthropic"])
@pytest.mark.parametrize(("model", "provider"), MODELS)
@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_card_and_email_never_reach_the_provider_and_come_back_restored(momor, fake, dialect, model, provider,
                                                                        stream):
    org_policy(MASK)
    path, body = ask(dialect, model, PROMPT, stream=stream)
    if stream:
        response, frames = momor.stream(path, body)
        assert response.status_code == 200
        text = streamed_text(dialect, frames)
    else:
        response = momor.post(path, body)
        assert response.status_code == 200, response.text
        text = answer_text(dialect, response.json())
    sent = sent_to(fake, provider)
    assert CARD not in sent and EMAIL not in sent and "4111" not in sent and "jane" not in sent
    assert "[CARD_1]" in sent and sent.count("[EMAIL_1]") == 2  # one value, one placeholder, twice
    assert text == f"Echo: {PROMPT}"  # the fake echoed placeholders; the caller reads its own values
    record = record_of(momor, response.headers["x-momor-request-id"])
    verdicts = record["guardrails"]
    assert verdicts == [{"guardrail": "pii", "origin": "organization", "direction": "input", "check": "pii",
                         "action": "mask", "where": "message 0", "spans": 3, "entities": {"email": 2, "card": 1}}]
    assert CARD not in json.dumps(record) and EMAIL not in json.dumps(record)


def test_a_placeholder_split_across_stream_chunks_is_restored_whole(momor, fake):
    org_policy(MASK)
    fake.script("openai", reply(text="Sent to [EMAIL_1] for [CARD_1].",
                                chunks=["Sent to [EM", "AIL", "_1] for [", "CARD_1", "]."]))
    response, frames = momor.stream(*ask("openai", "gpt-5-mini", PROMPT, stream=True))
    assert response.status_code == 200
    assert streamed_text("openai", frames) == f"Sent to {EMAIL} for {CARD}."


def refusal(dialect: str, response: httpx2.Response) -> str:
    """The refusal's message, after checking it is the dialect's own error shape with the code."""
    assert response.status_code == 400, response.text
    body = response.json()
    if dialect == "native":
        assert response.headers["content-type"].startswith("application/problem+json")
        assert body["code"] == "guardrail_refused" and body["status"] == 400
        return body["detail"]
    if dialect == "openai":
        assert body["error"]["code"] == "guardrail_refused" and body["error"]["type"] == "invalid_request_error"
        return body["error"]["message"]
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["details"] == {"error_code": "guardrail_refused"}
    return body["error"]["message"]


@pytest.mark.parametrize("dialect", ["native", "openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_a_blocked_input_is_refused_before_any_provider_is_asked(momor, fake, dialect, stream):
    org_policy(BLOCK)
    path, body = ask(dialect, "gpt-5-mini", "Tell me about Project Falcon's launch.", stream=stream)
    response = momor.post(path, body)
    message = refusal(dialect, response)
    assert "codenames" in message and "Falcon" not in message and "falcon" not in message
    assert fake.requests() == []
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["status"] == 400 and record["attempts"] == []
    assert record["guardrails"][0]["guardrail"] == "codenames" and record["guardrails"][0]["action"] == "block"


OUTPUT_BLOCK = {"output": [{"check": "denylist", "action": "block", "words": ["forbidden"], "name": "words"}]}


@pytest.mark.parametrize("dialect", ["native", "openai", "anthropic"])
def test_an_output_block_ends_the_stream_with_the_dialects_error_frame(momor, fake, dialect):
    org_policy(OUTPUT_BLOCK)
    fake.script("openai", reply(text="This is fine. " * 60 + "Now the forbidden part. And more after it.",
                                chunks=40))
    response, frames = momor.stream(*ask(dialect, "gpt-5-mini", "Hello", stream=True))
    assert response.status_code == 200
    text = streamed_text(dialect, frames)
    assert "forbidden" not in text and "more after" not in text and text.startswith("This is fine.")
    last_event, last = frames[-1]
    if dialect == "native":
        assert last_event == "error" and last["code"] == "guardrail_refused" and last["status"] == 400
    elif dialect == "openai":
        assert last["error"]["type"] == "guardrail_refused" and last["choices"][0]["finish_reason"] == "error"
    else:
        assert last_event == "error" and last["error"]["details"] == {"error_code": "guardrail_refused"}
    assert "words" in json.dumps(last)
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["outcome"] == "failed" and "words" in record["error"]
    assert record["guardrails"][-1]["direction"] == "output"


def test_an_output_block_refuses_a_buffered_answer(momor, fake):
    org_policy(OUTPUT_BLOCK)
    fake.script("openai", reply(text="the forbidden word"))
    response = momor.post(*ask("openai", "gpt-5-mini", "Hello", stream=False))
    assert "words" in refusal("openai", response) and "forbidden" not in response.text


def admin_key() -> str:
    from momor.config import get_config

    plaintext, _ = apikeys.create_api_key("admin key", org=organizations.DEFAULT_ORG, owner="admin script")
    aws.client("dynamodb").update_item(
        TableName=get_config().need("api_keys_table"), Key={"keyHash": {"S": apikeys.key_hash(plaintext)}},
        UpdateExpression="SET #r = :r", ExpressionAttributeNames={"#r": "role"},
        ExpressionAttributeValues={":r": {"S": "admin"}})
    return plaintext


def keys_api(momor: Any, credential: str, method: str, path: str = "", body: Any = None) -> httpx2.Response:
    return httpx2.request(method, f"{momor.url}/keys{path}", json=body, timeout=30,
                          headers={"Authorization": f"Bearer {credential}", "Content-Type": "application/json"})


def test_a_key_adds_checks_to_its_organizations_and_a_bad_policy_is_a_400(momor, fake):
    org_policy(MASK)
    admin = admin_key()
    bad = keys_api(momor, admin, "PATCH", f"/{momor.caller_id}", {"guardrails": {"input": [{"check": "pii"}]}})
    assert bad.status_code == 400 and bad.json()["detail"].startswith("guardrails.input[0].action")
    unknown = keys_api(momor, admin, "POST", "", {"name": "x", "guardrails": {"input": [
        {"check": "moderation", "action": "block"}]}})
    # moderation needs the deployment's moderation provider (MOMOR_GUARDRAIL_MODERATION_PROVIDER), unset here
    assert unknown.status_code == 400 and "MOMOR_GUARDRAIL_MODERATION_PROVIDER" in unknown.json()["detail"]
    changed = keys_api(momor, admin, "PATCH", f"/{momor.caller_id}", {"guardrails": BLOCK})
    assert changed.status_code == 200, changed.text
    assert changed.json()["guardrails"]["input"][0]["name"] == "codenames"
    me = momor.get("/me").json()
    assert me["organization"]["guardrails"]["input"][0]["check"] == "pii"
    # both run: the organization's mask, and the key's block
    response = momor.post(*ask("native", "gpt-5-mini", f"{EMAIL}: project falcon", stream=False))
    assert "codenames" in refusal("native", response)
    response = momor.post(*ask("native", "gpt-5-mini", PROMPT, stream=False))
    assert response.status_code == 200 and EMAIL not in sent_to(fake, "openai")
    # clearing the key's checks leaves the organization's
    cleared = keys_api(momor, admin, "PATCH", f"/{momor.caller_id}", {"guardrails": None})
    assert cleared.json()["guardrails"] == {"input": [], "output": []}
    fake.reset()
    response = momor.post(*ask("native", "gpt-5-mini", f"{EMAIL}: project falcon", stream=False))
    assert response.status_code == 200 and EMAIL not in sent_to(fake, "openai")


def test_a_member_key_cannot_set_guardrails(momor):
    member = keys_api(momor, momor.api_key, "PATCH", f"/{momor.caller_id}", {"guardrails": None})
    assert member.status_code == 403


def test_usage_counts_calls_masked_blocked_and_logged_per_guardrail_and_key(momor, fake):
    org_policy({"input": [MASK["input"][0], BLOCK["input"][0], {"check": "pii", "action": "log", "name": "seen"}]})
    for text in (PROMPT, PROMPT, "nothing to see", "about project falcon"):
        momor.post(*ask("native", "gpt-5-mini", text, stream=False))
    momor.settle()
    rows = momor.get("/usage").json()["guardrails"]
    mine = {(r["guardrail"], r["origin"]): (r["masked"], r["blocked"], r["logged"]) for r in rows
            if r["key"] == momor.caller_id}
    assert mine == {("pii", "organization"): (2, 0, 0), ("seen", "organization"): (0, 0, 2),
                    ("codenames", "organization"): (0, 1, 0)}
    other = apikeys.create_api_key("another key")[0]  # a member's key sees its own counts only: none
    assert momor.get("/usage", api_key=other).json()["guardrails"] == []


# --- Amazon Comprehend's DetectPiiEntities, through its strict fake -----------------------------------


@pytest.fixture(scope="module")
def comprehend_server():
    from tests.fakes.comprehend import FakeComprehend

    from .conftest import _Server

    fake_comprehend = FakeComprehend()
    with _Server(fake_comprehend) as server:
        server.fake = fake_comprehend
        yield server


@pytest.fixture
def comprehend(comprehend_server, monkeypatch):
    comprehend_server.fake.requests.clear()
    comprehend_server.fake.down = False
    monkeypatch.setenv("AWS_ENDPOINT_URL_COMPREHEND", comprehend_server.url)
    return comprehend_server


def test_the_comprehend_fake_speaks_what_boto3_sends_and_refuses_what_comprehend_refuses(comprehend):
    import boto3

    client = boto3.client("comprehend", endpoint_url=comprehend.url, region_name="us-east-1",
                          aws_access_key_id="AKIDFAKE", aws_secret_access_key="fake-secret")
    got = client.detect_pii_entities(Text=f"my name is Jane Doe, mail {EMAIL}", LanguageCode="en")
    assert [(e["Type"], e["BeginOffset"], e["EndOffset"]) for e in got["Entities"]] == [
        ("NAME", 11, 19), ("EMAIL", 26, 26 + len(EMAIL))]
    with pytest.raises(client.exceptions.TextSizeLimitExceededException):
        client.detect_pii_entities(Text="a" * 100_001, LanguageCode="en")
    with pytest.raises(client.exceptions.UnsupportedLanguageException):
        client.detect_pii_entities(Text="bonjour", LanguageCode="fr")
    comprehend.fake.down = True
    with pytest.raises(client.exceptions.InternalServerException):
        client.detect_pii_entities(Text="hello", LanguageCode="en")


COMPREHEND_MASK = {"input": [{"check": "comprehend", "action": "mask", "restore": True,
                              "entities": ["NAME", "EMAIL"], "name": "aws-pii"}]}


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_comprehend_masks_what_it_finds_and_the_answer_is_restored(momor, fake, comprehend, stream):
    org_policy(COMPREHEND_MASK)
    text = f"Hi, my name is Jane Doe and my mail is {EMAIL}."
    path, body = ask("openai", "gpt-5-mini", text, stream=stream)
    if stream:
        response, frames = momor.stream(path, body)
        answer = streamed_text("openai", frames)
    else:
        response = momor.post(path, body)
        answer = answer_text("openai", response.json())
    assert response.status_code == 200
    assert comprehend.fake.requests == [{"Text": text, "LanguageCode": "en"}]
    sent = sent_to(fake, "openai")
    assert "Jane" not in sent and EMAIL not in sent and "[NAME_1]" in sent and "[EMAIL_1]" in sent
    assert answer == f"Echo: {text}"
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["guardrails"][0]["entities"] == {"NAME": 1, "EMAIL": 1}


def test_comprehend_down_fails_closed_with_a_503_naming_the_guardrail_or_open_when_told(momor, fake, comprehend):
    comprehend.fake.down = True
    org_policy(COMPREHEND_MASK)
    response = momor.post(*ask("anthropic", "gpt-5-mini", f"mail {EMAIL}", stream=False))
    assert response.status_code == 503, response.text
    assert response.json()["error"]["details"] == {"error_code": "guardrail_unavailable"}
    assert "aws-pii" in response.json()["error"]["message"] and EMAIL not in response.text
    assert fake.requests() == []  # never sent unchecked
    opened = {"input": [{**COMPREHEND_MASK["input"][0], "failure": "open"}]}
    org_policy(opened)
    response = momor.post(*ask("anthropic", "gpt-5-mini", f"mail {EMAIL}", stream=False))
    assert response.status_code == 200
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert "InternalServerException" in record["guardrails"][0]["failed"]


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_the_responses_route_masks_and_restores_too(momor, fake, stream):
    import openai

    org_policy(MASK)
    client = openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)
    if stream:
        events = list(client.responses.create(model="gpt-5-mini", input=PROMPT, stream=True))
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert events[-1].response.output_text == text
    else:
        text = client.responses.create(model="gpt-5-mini", input=PROMPT).output_text
    assert text == f"Echo: {PROMPT}"
    sent = sent_to(fake, "openai")
    assert CARD not in sent and EMAIL not in sent and "[CARD_1]" in sent


# --- Amazon Bedrock Guardrails' ApplyGuardrail, through its strict fake -----------------------------


@pytest.fixture(scope="module")
def bedrock_server():
    from tests.fakes.bedrock_guardrail import FakeBedrockGuardrail

    from .conftest import _Server

    fake_bedrock = FakeBedrockGuardrail()
    with _Server(fake_bedrock) as server:
        server.fake = fake_bedrock
        yield server


@pytest.fixture
def bedrock(bedrock_server, monkeypatch):
    bedrock_server.fake.requests.clear()
    bedrock_server.fake.down = False
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock_server.url)
    return bedrock_server


def test_the_bedrock_guardrail_fake_speaks_what_boto3_sends(bedrock):
    import boto3

    from tests.fakes.bedrock_guardrail import GUARDRAIL

    client = boto3.client("bedrock-runtime", endpoint_url=bedrock.url, region_name="us-east-1",
                          aws_access_key_id="AKIDFAKE", aws_secret_access_key="fake-secret")
    got = client.apply_guardrail(guardrailIdentifier=GUARDRAIL, guardrailVersion="1", source="INPUT",
                                 content=[{"text": {"text": f"mail {EMAIL}"}}])
    assert got["action"] == "GUARDRAIL_INTERVENED" and got["outputs"] == [{"text": "mail {EMAIL}"}]
    assert got["assessments"][0]["sensitiveInformationPolicy"]["piiEntities"][0]["match"] == EMAIL
    blocked = client.apply_guardrail(guardrailIdentifier=GUARDRAIL, guardrailVersion="DRAFT", source="INPUT",
                                     content=[{"text": {"text": "buy crypto"}}])
    assert blocked["assessments"][0]["topicPolicy"]["topics"][0]["action"] == "BLOCKED"
    ssn = client.apply_guardrail(guardrailIdentifier=GUARDRAIL, guardrailVersion="1", source="OUTPUT",
                                 content=[{"text": {"text": "her number is 078-05-1120"}}])
    found = ssn["assessments"][0]["sensitiveInformationPolicy"]["piiEntities"]
    assert ssn["action"] == "GUARDRAIL_INTERVENED" and found[0]["action"] == "BLOCKED"
    assert found[0]["type"] == "US_SOCIAL_SECURITY_NUMBER" and ssn["outputs"][0]["text"] != "her number is 078-05-1120"
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.apply_guardrail(guardrailIdentifier="other", guardrailVersion="1", source="INPUT",
                               content=[{"text": {"text": "x"}}])
    bedrock.fake.down = True
    with pytest.raises(client.exceptions.ServiceUnavailableException):
        client.apply_guardrail(guardrailIdentifier=GUARDRAIL, guardrailVersion="1", source="INPUT",
                               content=[{"text": {"text": "x"}}])


def bedrock_policy(action: str, **extra: Any) -> dict[str, Any]:
    from tests.fakes.bedrock_guardrail import GUARDRAIL

    return {"input": [{"check": "bedrock", "action": action, "guardrailId": GUARDRAIL, "guardrailVersion": "1",
                       "name": "company-guardrail", **extra}]}


def test_bedrock_masks_its_findings_refuses_a_denied_topic_and_fails_closed(momor, fake, bedrock):
    org_policy(bedrock_policy("mask"))
    response = momor.post(*ask("native", "gpt-5-mini", f"mail {EMAIL} today", stream=False))
    assert response.status_code == 200, response.text
    assert bedrock.fake.requests[-1]["content"] == [{"text": {"text": f"mail {EMAIL} today"}}]
    sent = sent_to(fake, "openai")
    assert EMAIL not in sent and "[EMAIL_1]" in sent
    fake.reset()
    topic = momor.post(*ask("native", "gpt-5-mini", "tell me about crypto", stream=False))
    assert "company-guardrail" in refusal("native", topic) and fake.requests() == []
    bedrock.fake.down = True
    down = momor.post(*ask("openai", "gpt-5-mini", "hello", stream=False))
    assert down.status_code == 503 and down.json()["error"]["code"] == "guardrail_unavailable"
    assert "company-guardrail" in down.json()["error"]["message"] and fake.requests() == []
    org_policy(bedrock_policy("mask", failure="open"))
    assert momor.post(*ask("openai", "gpt-5-mini", "hello", stream=False)).status_code == 200


def test_the_organization_script_sets_checks_and_refuses_a_bad_policy(momor, fake, capsys):
    from infra import organization as script

    organizations.ensure_default()
    def printed_policy() -> dict[str, Any]:  # the server's call log lines share stdout here
        return json.loads(next(line for line in capsys.readouterr().out.splitlines() if line.startswith('{"input"')))

    script.main(["guardrails", "default", json.dumps(BLOCK)])
    printed = printed_policy()
    assert printed["input"][0]["name"] == "codenames" and printed["input"][0]["words"] == ["project falcon"]
    assert "codenames" in refusal("openai", momor.post(*ask("openai", "gpt-5-mini", "Project Falcon?",
                                                             stream=False)))
    with pytest.raises(SystemExit, match=r"guardrails.input\[0\].action"):
        script.main(["guardrails", "default", '{"input": [{"check": "pii"}]}'])
    script.main(["guardrails", "default", "--clear"])
    assert printed_policy() == {"input": [], "output": []}
    assert momor.post(*ask("openai", "gpt-5-mini", "Project Falcon?", stream=False)).status_code == 200


# --- OpenAI's moderation endpoint, through the OpenAI fake's /v1/moderations ------------------------


@pytest.fixture
def moderation(momor, monkeypatch):
    """The deployment names the catalog's `openai` provider (the fake's OpenAI label) for moderation."""
    from momor.config import reset_config

    monkeypatch.setenv("MOMOR_GUARDRAIL_MODERATION_PROVIDER", "openai")
    reset_config()
    return momor


def moderations_sent(fake: Any) -> list[dict[str, Any]]:
    return [r.json for r in fake.requests("openai") if r.path.endswith("/v1/moderations")]


def test_the_moderation_fake_speaks_what_the_openai_sdk_sends_and_refuses_what_openai_refuses(fake):
    import openai

    client = openai.OpenAI(base_url=f"{fake.url}/openai/v1", api_key="sk-test-moderation", max_retries=0)
    flagged = client.moderations.create(model="omni-moderation-latest", input="I will kill the process")
    assert flagged.model == "omni-moderation-latest" and flagged.id.startswith("modr-")
    assert flagged.results[0].flagged and flagged.results[0].categories.violence
    assert not flagged.results[0].categories.harassment and flagged.results[0].category_scores.violence > 0.5
    several = client.moderations.create(input=["hello", "you idiot"])
    assert [r.flagged for r in several.results] == [False, True] and several.results[1].categories.harassment
    parts = client.moderations.create(model="omni-moderation-latest", input=[
        {"type": "text", "text": "a picture"}, {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}])
    assert len(parts.results) == 1 and parts.results[0].category_applied_input_types.violence == ["text", "image"]
    with pytest.raises(openai.BadRequestError, match="multi-modal"):
        client.moderations.create(model="text-moderation-latest", input=[{"type": "text", "text": "x"}])
    with pytest.raises(openai.BadRequestError, match="Unrecognized request argument"):
        client.moderations.create(input="x", extra_body={"colour": "red"})
    with pytest.raises(openai.NotFoundError):
        client.moderations.create(model="moderation-9000", input="x")
    unsigned = httpx2.post(f"{fake.url}/openai/v1/moderations", json={"input": "x"}, timeout=10)
    assert unsigned.status_code == 401


MODERATION_BLOCK = {"input": [{"check": "moderation", "action": "block", "name": "content"}]}


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_moderation_refuses_a_flagged_input_and_serves_the_rest(moderation, fake, dialect):
    org_policy(MODERATION_BLOCK)
    flagged = "Explain how to kill a zombie process."
    response = moderation.post(*ask(dialect, "gpt-5-mini", flagged, stream=False))
    message = refusal(dialect, response)
    assert "content" in message and "moderation" in message and "zombie" not in message
    assert moderations_sent(fake) == [{"model": "omni-moderation-latest", "input": flagged}]
    assert [r for r in fake.requests() if not r.path.endswith("/moderations")] == []  # no provider asked
    record = record_of(moderation, response.headers["x-momor-request-id"])
    assert record["guardrails"][0]["check"] == "moderation" and record["guardrails"][0]["entities"] == {"violence": 1}
    assert "zombie" not in json.dumps(record)
    fake.reset()
    served = moderation.post(*ask(dialect, "gpt-5-mini", "Explain how to stop a process.", stream=False))
    assert served.status_code == 200, served.text
    assert moderations_sent(fake) == [{"model": "omni-moderation-latest", "input": "Explain how to stop a process."}]


def test_a_moderation_log_check_serves_the_call_and_records_its_verdict(moderation, fake):
    org_policy({"input": [{"check": "moderation", "action": "log"}]})
    response = moderation.post(*ask("native", "gpt-5-mini", "you idiot, answer me", stream=True))
    assert response.status_code == 200
    record = record_of(moderation, response.headers["x-momor-request-id"])
    assert record["guardrails"] == [{"guardrail": "moderation", "origin": "organization", "direction": "input",
                                     "check": "moderation", "action": "log", "where": "message 0", "spans": 1,
                                     "entities": {"harassment": 1}}]


def test_moderation_down_fails_closed_with_a_503_or_open_when_told(moderation, fake):
    from tests.fakes.script import fail

    org_policy(MODERATION_BLOCK)
    fake.script("openai", fail(503), model="omni-moderation-latest")
    response = moderation.post(*ask("openai", "gpt-5-mini", "hello there", stream=False))
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "guardrail_unavailable" and "content" in error["message"]
    assert "moderation provider 'openai'" in error["message"] and "503" in error["message"]
    assert "sk-saved-openai" not in response.text
    assert [r for r in fake.requests() if not r.path.endswith("/moderations")] == []  # never sent unchecked
    org_policy({"input": [{**MODERATION_BLOCK["input"][0], "failure": "open"}]})
    fake.script("openai", fail(503), model="omni-moderation-latest")
    response = moderation.post(*ask("openai", "gpt-5-mini", "hello there", stream=False))
    assert response.status_code == 200, response.text
    record = record_of(moderation, response.headers["x-momor-request-id"])
    assert record["guardrails"][0]["failed"] and record["guardrails"][0]["check"] == "moderation"


def test_a_zero_data_retention_call_never_sends_its_text_to_a_moderation_provider_not_marked_zdr(moderation, fake):
    # The test catalog's `openai` provider has no `zdr: true`: the check cannot run for a zdr call, so
    # the call is refused (closed) and neither the moderation endpoint nor a model hears its words.
    org_policy(MODERATION_BLOCK)
    path, body = ask("openai", "gpt-5-mini", "my private words", stream=False)
    response = moderation.post(path, {**body, "provider": {"zdr": True}})
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "guardrail_unavailable" and "zero data retention" in error["message"]
    assert moderations_sent(fake) == [] and fake.requests() == []
    plain = moderation.post(*ask("openai", "gpt-5-mini", "my ordinary words", stream=False))
    assert plain.status_code == 200, plain.text  # the same check on a call without zdr asks it
    assert [m["input"] for m in moderations_sent(fake)] == ["my ordinary words"]


def test_moderation_is_refused_where_the_deployment_names_no_provider_and_cannot_mask(momor, moderation,
                                                                                     monkeypatch):
    from momor.config import reset_config

    admin = admin_key()
    masked = keys_api(momor, admin, "PATCH", f"/{momor.caller_id}",
                      {"guardrails": {"input": [{"check": "moderation", "action": "mask"}]}})
    assert masked.status_code == 400 and masked.json()["detail"].startswith("guardrails.input[0].action")
    set_here = keys_api(momor, admin, "PATCH", f"/{momor.caller_id}", {"guardrails": MODERATION_BLOCK})
    assert set_here.status_code == 200, set_here.text
    monkeypatch.delenv("MOMOR_GUARDRAIL_MODERATION_PROVIDER")
    reset_config()
    refused = keys_api(momor, admin, "POST", "", {"name": "x", "guardrails": MODERATION_BLOCK})
    assert refused.status_code == 400 and "MOMOR_GUARDRAIL_MODERATION_PROVIDER" in refused.json()["detail"]
    # the key's stored check: its calls are refused saying so, never served unchecked
    stored = momor.post(*ask("openai", "gpt-5-mini", "hello", stream=False))
    assert stored.status_code == 400 and "MOMOR_GUARDRAIL_MODERATION_PROVIDER" in stored.json()["error"]["message"]


# --- Services' checks on output: Comprehend, Bedrock Guardrails and moderation on the answer ---------

LONG = "This part of the answer is plain text. " * 20
"""Longer than the default window (512), within the 200 tokens `ask` allows on Anthropic's route: a
stream's output checks run on it window by window."""


def streamed_or_whole(momor: Any, dialect: str, text: str, stream: bool) -> tuple[httpx2.Response, str, Any]:
    """(response, the answer's text, the last stream frame or None)."""
    path, body = ask(dialect, "gpt-5-mini", text, stream=stream)
    if not stream:
        response = momor.post(path, body)
        return response, answer_text(dialect, response.json()) if response.status_code == 200 else "", None
    response, frames = momor.stream(path, body)
    return response, streamed_text(dialect, frames), frames[-1]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_comprehend_masks_the_answer_window_by_window(momor, fake, comprehend, dialect, stream):
    org_policy({"output": [{"check": "comprehend", "action": "mask", "entities": ["EMAIL"], "name": "aws-out"}]})
    answer = f"{LONG}Write to {EMAIL} today, or to {EMAIL} tomorrow."
    fake.script("openai", reply(text=answer, chunks=60))
    response, text, _ = streamed_or_whole(momor, dialect, "hello", stream)
    assert response.status_code == 200, response.text
    assert text == answer.replace(EMAIL, "[EMAIL]")
    sent = [r["Text"] for r in comprehend.fake.requests]
    if stream:  # held back at most the window (512) and the chunk that reached it: asked window by window
        chunk = -(-len(answer) // 60)  # split_text's even pieces
        assert len(sent) > 2 and all(len(t) < 512 + chunk for t in sent)
    else:
        assert sent == [answer]
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["guardrails"] == [{"guardrail": "aws-out", "origin": "organization", "direction": "output",
                                     "check": "comprehend", "action": "mask", "where": "answer", "spans": 2,
                                     "entities": {"EMAIL": 2}}]
    assert EMAIL not in json.dumps(record)


def bedrock_output(action: str, **extra: Any) -> dict[str, Any]:
    return {"output": bedrock_policy(action, **extra)["input"]}


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_bedrock_on_output_anonymizes_as_mask_and_blocks_what_it_blocks(momor, fake, bedrock, stream):
    org_policy(bedrock_output("mask"))
    fake.script("openai", reply(text=f"{LONG}Mail {EMAIL}.", chunks=30))
    response, text, _ = streamed_or_whole(momor, "native", "hello", stream)
    assert response.status_code == 200 and text == f"{LONG}Mail [EMAIL]."
    assert {r["source"] for r in bedrock.fake.requests} == {"OUTPUT"}
    fake.script("openai", reply(text=f"{LONG}Her number is 078-05-1120, and more after it.", chunks=30))
    response, text, last = streamed_or_whole(momor, "native", "hello", stream)
    assert "078-05" not in text and "more after" not in text
    if stream:
        assert response.status_code == 200 and last[0] == "error" and last[1]["code"] == "guardrail_refused"
        assert "company-guardrail" in last[1]["detail"]
    else:
        assert "company-guardrail" in refusal("native", response)
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["outcome"] == "failed" and record["guardrails"][-1]["direction"] == "output"


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_an_output_service_down_ends_the_stream_with_a_503_frame_or_goes_on_when_open(momor, fake, bedrock, dialect):
    bedrock.fake.down = True
    org_policy(bedrock_output("block"))
    fake.script("openai", reply(text=LONG.rstrip(), chunks=20))
    response, text, last = streamed_or_whole(momor, dialect, "hello", True)
    assert response.status_code == 200 and len(text) < len(LONG.rstrip())  # the unchecked rest is never sent
    frame = last[1]
    if dialect == "openai":
        assert frame["error"]["type"] == "guardrail_unavailable" and "company-guardrail" in frame["error"]["message"]
    else:
        assert frame["error"]["details"] == {"error_code": "guardrail_unavailable"}
    assert record_of(momor, response.headers["x-momor-request-id"])["outcome"] == "failed"
    buffered = momor.post(*ask(dialect, "gpt-5-mini", "hello", stream=False))
    assert buffered.status_code == 503 and "company-guardrail" in buffered.text
    org_policy(bedrock_output("block", failure="open"))
    fake.script("openai", reply(text=LONG.rstrip(), chunks=20))
    response, text, _ = streamed_or_whole(momor, dialect, "hello", True)
    assert text == LONG.rstrip()
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert [v["direction"] for v in record["guardrails"]] == ["output"] and record["guardrails"][0]["failed"]


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_moderation_on_output_refuses_a_flagged_answer(moderation, fake, stream):
    org_policy({"output": [{"check": "moderation", "action": "block", "name": "content"}]})
    fake.script("openai", reply(text=f"{LONG}Then kill it with fire. And more after it.", chunks=30))
    response, text, last = streamed_or_whole(moderation, "openai", "hello", stream)
    assert "fire" not in text and "more after" not in text
    if stream:
        assert last[1]["error"]["type"] == "guardrail_refused" and "content" in last[1]["error"]["message"]
    else:
        assert "content" in refusal("openai", response)
    assert moderations_sent(fake) and all(m["model"] == "omni-moderation-latest" for m in moderations_sent(fake))
    fake.reset()
    fake.script("openai", reply(text=LONG.rstrip(), chunks=30))
    response, text, _ = streamed_or_whole(moderation, "openai", "hello", stream)
    assert response.status_code == 200 and text == LONG.rstrip()


# --- Files: converted text is screened; a file sent as it is is refused unless the policy allows it ---


def file_call(text: str, pdf_lines: tuple[str, ...], **extra: Any) -> dict[str, Any]:
    import base64

    from tests.media import pdf_with_text

    pdf = {"type": "bytes", "value": base64.b64encode(pdf_with_text(*pdf_lines)).decode(), "name": "report.pdf",
           "contentType": "application/pdf"}
    return {"systemPrompt": "", "messages": [{"type": "user", "value": text, "files": [pdf]}], **extra}


def test_a_converted_files_text_is_masked_with_the_calls_placeholders_and_restored(momor, fake):
    org_policy(MASK)
    payload = file_call(f"Mail {EMAIL} the summary.", (f"Billed to card {CARD}.", f"Contact {EMAIL}."),
                        model="llama-3.3-70b", fileProcessing={"type": "auto"})
    response = momor.post("/models", payload)
    assert response.status_code == 200, response.text
    sent = sent_to(fake, "deepinfra")
    assert CARD not in sent and EMAIL not in sent and "4111" not in sent
    assert sent.count("[EMAIL_1]") == 2 and "[CARD_1]" in sent  # the prompt's e-mail, the same in the file
    answer = answer_text("native", response.json())
    assert EMAIL in answer and CARD in answer  # the echo, restored
    record = record_of(momor, response.headers["x-momor-request-id"])
    wheres = {v["where"]: v["entities"] for v in record["guardrails"]}
    assert wheres == {"message 0": {"email": 1}, "messages[0].files[0]": {"email": 1, "card": 1}}
    assert CARD not in json.dumps(record) and EMAIL not in json.dumps(record)


def test_a_block_in_a_converted_files_text_is_a_400_naming_the_file(momor, fake):
    org_policy(BLOCK)
    payload = file_call("Summarize.", ("The Project Falcon launch plan.",), model="llama-3.3-70b",
                        fileProcessing={"type": "auto"})
    message = refusal("native", momor.post("/models", payload))
    assert "codenames" in message and "report.pdf" in message and "Falcon" not in message
    assert fake.requests() == []


def test_a_file_sent_as_it_is_is_refused_under_a_mask_policy_unless_it_allows_unscreened_files(momor, fake):
    import base64

    org_policy(MASK)
    payload = file_call("Summarize.", ("A plain report.",), model="claude-sonnet-4-5")
    refused = momor.post("/models", payload)
    assert refused.status_code == 400 and "report.pdf" in refused.json()["detail"]
    assert "unscreenedFiles" in refused.json()["detail"] and fake.requests() == []
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode()
    openai_call = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}]}]}
    refused = momor.post("/v1/chat/completions", openai_call)
    assert refused.status_code == 400 and "unscreenedFiles" in refused.json()["error"]["message"]
    assert fake.requests() == []
    org_policy({**MASK, "unscreenedFiles": "allow"})
    assert momor.post("/models", payload).status_code == 200
    assert momor.post("/v1/chat/completions", openai_call).status_code == 200


def test_a_services_check_reads_a_converted_files_text_too(momor, fake, comprehend):
    org_policy(COMPREHEND_MASK)
    payload = file_call("Summarize.", ("Signed: my name is Jane Doe.",), model="llama-3.3-70b",
                        fileProcessing={"type": "auto"})
    response = momor.post("/models", payload)
    assert response.status_code == 200, response.text
    asked = [r["Text"] for r in comprehend.fake.requests]
    assert asked == ["Summarize.", "Signed: my name is Jane Doe."]  # the prompt, then the file's text
    sent = sent_to(fake, "deepinfra")
    assert "Jane" not in sent and "[NAME_1]" in sent
    comprehend.fake.down = True  # down while the file is converted: closed, a 503 naming the guardrail
    fake.reset()
    down = momor.post("/models", payload)
    assert down.status_code == 503 and "aws-pii" in down.json()["detail"] and fake.requests() == []
