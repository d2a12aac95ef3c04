"""Model kinds in the plan, reading a decision, choosing conversions and reading a transcription."""

from __future__ import annotations

import pytest

from momor.catalog import parse_catalog
from momor.errors import ProviderError, RoutingError
from momor.messages import ContentMessage, File, ToolCallBody, ToolCallMessage
from momor.providers.openai_transcribe import WIRE as TRANSCRIBE
from momor.routing.conversion import auto_choice, directed_choice
from momor.routing.decision import answer_text, match, strategy_for
from momor.routing.plan import plan
from momor.routing.selectors import parse_prioritization, parse_selectors


def _model(name, kind, provider="openai", **caps):
    return {"name": name, "publisher": "p", "kind": kind, "tier": "low", "released": "2026-01-01",
            "capabilities": caps,
            "offerings": [{"provider": provider, "id": name, "prices": {"input": 1, "output": 1}}]}


CATALOG = parse_catalog({
    "providers": [{"name": "openai", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:1/v1"},
                  {"name": "anthropic", "wire": "anthropic", "baseUrl": "http://127.0.0.1:2"}],
    "models": [_model("talk", "chat"), _model("pick", "decision", structuredOutput="jsonSchema"),
               _model("pick-tools", "decision", tools=True), _model("pick-text", "decision"),
               _model("hear", "transcription", input=["audio"]),
               _model("claude", "chat", provider="anthropic", input=["text", "image", "pdf"])],
})
PRIO = parse_prioritization(None)


def names(selectors, kind):
    return [c.model.name for c in plan(CATALOG, parse_selectors(selectors, None), PRIO, kind=kind)]


def test_each_kind_plans_only_its_own_models():
    assert names("auto", "chat") == ["claude", "talk"]
    assert sorted(names("auto", "decision")) == ["pick", "pick-text", "pick-tools"]
    assert names("auto", "transcription") == ["hear"]
    with pytest.raises(RoutingError, match="'pick' is a decision model; this route serves chat models only"):
        names("pick", "chat")
    with pytest.raises(RoutingError, match="No transcription model"):
        plan(CATALOG, parse_selectors({"name": "*", "provider": "anthropic"}, None), PRIO, kind="transcription")


def test_a_models_kind_defaults_to_chat_and_is_validated():
    assert CATALOG.models[0].kind == "chat"
    with pytest.raises(Exception, match="kind"):
        parse_catalog({"providers": CATALOG.model_dump(by_alias=True)["providers"],
                       "models": [_model("x", "summarization")]})


def test_strategy_follows_what_the_model_offers():
    by_name = {c.model.name: c for c in plan(CATALOG, parse_selectors("auto", None), PRIO, kind="decision")}
    assert [strategy_for(by_name[n]) for n in ("pick", "pick-tools", "pick-text")] == ["enum", "tool", "text"]


@pytest.mark.parametrize(("answer", "chosen"), [
    ("approve", "approve"), ("  Approve. ", "approve"), ('"reject"', "reject"), ("**escalate**", "escalate"),
    ("I approve", None), ("", None), ("approve or reject", None),
])
def test_match_accepts_only_an_option(answer, chosen):
    assert match(answer, ["approve", "reject", "escalate"]) == chosen


def test_match_refuses_an_answer_two_options_fold_to():
    assert match("yes", ["Yes", "YES"]) is None
    assert match("Yes", ["Yes", "YES"]) == "Yes"


def test_answer_text_reads_the_choice_of_each_strategy():
    assert answer_text([ContentMessage(value='{"choice": "b"}')], "enum") == "b"
    assert answer_text([ContentMessage(value="not json")], "enum") == "not json"
    call = ToolCallMessage(call=ToolCallBody(id="1", name="choose", arguments='{"choice": "a"}'))
    assert answer_text([call], "tool") == "a"
    assert answer_text([ContentMessage(value='{"choice": "b"}')], "text") == '{"choice": "b"}'


def test_directed_choice_exact_type_then_longest_prefix():
    types = {"audio/*": "transcription", "audio/wav": "hear", "*": "plain-text", "application/*": "pdf-text"}
    assert directed_choice("audio/wav", types) == "hear"
    assert directed_choice("audio/mpeg", types) == "transcription"
    assert directed_choice("application/pdf; x=1", types) == "pdf-text"
    assert directed_choice("image/png", types) == "plain-text"
    assert directed_choice("image/png", {"audio/*": "hear"}) is None


def _file(content_type, kind="bytes"):
    value = "https://example.com/f" if kind == "url" else "AAAA"
    return File(type=kind, value=value, name="f", contentType=content_type)


def test_auto_choice_per_candidate():
    talk, claude = (next(c for c in plan(CATALOG, parse_selectors(n, None), PRIO)) for n in ("talk", "claude"))
    assert auto_choice(_file("application/pdf"), talk) == "pdf-text"
    assert auto_choice(_file("application/pdf"), claude) is None
    assert auto_choice(_file("application/pdf", "url"), claude) is None  # Anthropic takes a PDF by address
    assert auto_choice(_file("audio/wav"), claude) == "transcription"
    assert auto_choice(_file("text/csv"), claude) == "plain-text"
    assert auto_choice(_file("application/zip"), claude) is None
    assert auto_choice(_file("image/png"), talk) == "image-description"
    assert auto_choice(_file("image/png"), claude) is None


@pytest.mark.parametrize(("content_type", "processor"), [
    ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx-text"),
    ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx-text"),
    ("Application/vnd.openxmlformats-officedocument.presentationml.presentation", "pptx-text"),
])
def test_auto_converts_office_documents_for_every_model(content_type, processor):
    for name in ("talk", "claude"):  # no wire carries them, whatever the model reads
        candidate = plan(CATALOG, parse_selectors(name, None), PRIO)[0]
        assert auto_choice(_file(content_type), candidate) == processor
        assert auto_choice(_file(content_type, "url"), candidate) == processor


def test_auto_fetches_what_a_wire_takes_only_as_bytes():
    catalog = parse_catalog({**CATALOG.model_dump(by_alias=True, mode="json"),
                             "models": [_model("seer", "chat", input=["text", "pdf", "image"])]})
    seer = plan(catalog, parse_selectors("seer", None), PRIO)[0]
    assert auto_choice(_file("application/pdf", "url"), seer) == "fetch"
    assert auto_choice(_file("image/png", "url"), seer) is None


def test_transcription_answers_read():
    tokens = TRANSCRIBE.parse_response(b'{"text": "hi", "usage": {"type": "tokens", "input_tokens": 5, '
                                       b'"output_tokens": 1, "total_tokens": 6}}')
    assert (tokens.text, tokens.usage.input_tokens, tokens.usage.output_tokens, tokens.duration_seconds) == \
        ("hi", 5, 1, None)
    duration = TRANSCRIBE.parse_response(b'{"text": "hi", "usage": {"type": "duration", "seconds": 3}}')
    assert duration.duration_seconds == 3.0 and duration.usage.input_tokens is None
    verbose = TRANSCRIBE.parse_response(b'{"text": "hi", "language": "english", "duration": 2.5}')
    assert verbose.language == "english" and verbose.duration_seconds == 2.5
    for bad in (b"nope", b'{"usage": {}}', b'[]'):
        with pytest.raises(ProviderError):
            TRANSCRIBE.parse_response(bad)
