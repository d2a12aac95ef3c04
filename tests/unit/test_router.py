"""The router alias's routing steps without a socket: memory bounds and placement, the request's
memory fields, how `model` routes, family order and the classifier's answer (seed 003)."""

from __future__ import annotations

import pytest

from momor.call import Call
from momor.catalog import parse_catalog
from momor.dialects.openai import parse as openai
from momor.dialects.openai.router_route import read_memory
from momor.errors import RoutingError
from momor.messages import ContentMessage, UserMessage
from momor.routing import families, memory
from momor.routing.classify import instructions, prompt_text, tier_in
from momor.routing.plan import Needs
from momor.routing.selectors import Prioritization


def turns(n, text="x"):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{text}{i}"} for i in range(n)]


# --- memory bounds --------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "messages"), [("auto", 8), ("full", 40)])
def test_each_mode_keeps_its_documented_number_of_recent_messages(mode, messages):
    thread = turns(100)
    kept = memory.recent(thread, mode)
    assert kept == thread[-messages:]  # the most recent, most recent last
    assert memory.BOUNDS[mode].messages == messages


@pytest.mark.parametrize(("mode", "tokens"), [("auto", 2000), ("full", 16000)])
def test_each_mode_keeps_within_its_documented_tokens(mode, tokens):
    long = [{"role": r, "content": "w" * 3000} for r in ("user", "assistant") * 20]  # ~750 tokens each
    kept = memory.recent(long, mode)
    per = memory.text_tokens('"' + "w" * 3000 + '"') + memory.MESSAGE_OVERHEAD
    assert len(kept) > 0 and len(kept) * per <= tokens < (len(kept) + 2) * per
    assert memory.BOUNDS[mode].tokens == tokens


def test_a_slice_never_opens_with_an_answer_and_off_keeps_nothing():
    thread = turns(9)  # user first: the last 8 start with an assistant message
    assert memory.recent(thread, "auto")[0]["role"] == "user"
    assert memory.recent(thread, "off") == []


def test_only_user_and_assistant_messages_are_said_verbatim():
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]
    said = memory.said([
        {"role": "system", "content": "rules"}, {"role": "developer", "content": "more rules"},
        {"role": "user", "content": parts, "name": "ada"},
        {"role": "assistant", "content": "seen"}, {"role": "tool", "tool_call_id": "t", "content": "42"},
    ])
    assert said == [{"role": "user", "content": parts}, {"role": "assistant", "content": "seen"}]


def test_memory_goes_after_the_instructions_and_before_the_new_turn():
    raw = {"messages": [{"role": "system", "content": "S"}, {"role": "developer", "content": "D"},
                        {"role": "user", "content": "new"}]}
    call = Call(system="S\n\nD", messages=[UserMessage(value="new")], raw=raw, raw_wire="openai_chat")
    remembered = [{"role": "user", "content": "old"}, {"role": "assistant", "content": "answer"}]
    out = memory.with_memory(call, remembered, lambda t: openai.map_messages(t)[1])
    assert [m["content"] for m in out.raw["messages"]] == ["S", "D", "old", "answer", "new"]
    assert out.messages == [UserMessage(value="old"), ContentMessage(value="answer"), UserMessage(value="new")]
    assert out.system == "S\n\nD"
    assert raw["messages"][2]["content"] == "new" and len(raw["messages"]) == 3  # the caller's body untouched


# --- the request's memory fields -----------------------------------------------------------------


def test_chat_id_aliases_in_order():
    asked = read_memory({"memory_id": "m", "thread_id": "t", "conversation_id": "c"})
    assert asked.chat_id == "c"
    assert read_memory({"memory_id": "m", "thread_id": "t"}).chat_id == "t"
    assert read_memory({}) == memory.Ask(None, "auto", False)


@pytest.mark.parametrize(("context", "mode"), [(True, "auto"), ("auto", "auto"), ("full", "full"), (False, "off")])
def test_context_values(context, mode):
    assert read_memory({"context": context}).mode == mode


@pytest.mark.parametrize(("body", "param"), [
    ({"context": None}, "context"), ({"context": "FULL"}, "context"), ({"context": 0}, "context"),
    ({"chat_id": ""}, "chat_id"), ({"thread_id": ["a"]}, "thread_id"),
    ({"chat_id": "c" * (memory.CHAT_ID_MAX + 1)}, "chat_id"),
    ({"new_chat": True, "chat_id": "a"}, "new_chat"), ({"new_chat": 1}, "new_chat"),
])
def test_bad_memory_fields_name_the_field(body, param):
    with pytest.raises(RoutingError) as caught:
        read_memory(body)
    assert caught.value.param == param and caught.value.detail.startswith(param)


def test_a_chat_id_at_the_bound_is_fine():
    assert read_memory({"chat_id": "c" * memory.CHAT_ID_MAX}).chat_id == "c" * memory.CHAT_ID_MAX


# --- how model routes, and in which order ---------------------------------------------------------


def _model(name, tier, *providers):
    return {"name": name, "publisher": "p", "tier": tier,
            "offerings": [{"provider": p, "id": f"{name}@{p}", "prices": {"input": price, "output": 0}}
                          for p, price in providers]}


CATALOG = parse_catalog({
    "providers": [{"name": n, "wire": "openai_chat", "baseUrl": "http://127.0.0.1:1/v1"}
                  for n in ("zen", "nvidia", "puter", "openai")],
    "models": [
        _model("cheap-elsewhere", "medium", ("openai", 0.0)),
        _model("zm", "medium", ("zen", 1.0), ("puter", 0.5)),
        _model("nm", "medium", ("nvidia", 0.0)),
        _model("nl", "high", ("nvidia", 0.0), ("puter", 0.0)),
        _model("zl", "low", ("zen", 0.0)),
    ],
})


@pytest.mark.parametrize(("model", "kind"), [
    (None, "auto"), ("auto", "auto"), ("", "auto"), ("Router", "auto"), ("nonsense", "auto"), ("nonsense/x", "auto"),
    ("zen", "family"), ("nvidia-auto", "family"), ("nm", "model"), ("tier/high", "tier"), ("p/nm", "selectors"),
])
def test_what_model_asks_for(model, kind):
    assert families.read(model, None, CATALOG).kind == kind


def labels(found):
    return [f"{c.model.name}@{c.provider.name}" for c in found]


def test_a_variant_is_one_of_the_models_reasoning_depths():
    listed = parse_catalog({**CATALOG.model_dump(by_alias=True, mode="json"), "models": [
        {**_model("ds", "low", ("zen", 0.0)), "capabilities": {"reasoning": ["low", "medium", "high", "max"]}}]})
    assert families.read("ds:MAX", None, listed) == families.Ask(
        "model", selectors=(families.Selector(name="ds", written="ds:MAX"),), variant="max")
    assert families.read("ds:xhigh", None, listed).kind == "auto"  # not a variant it lists
    assert families.read("ghost:low", None, listed).kind == "auto"


def test_auto_serves_the_tier_family_by_family_then_the_rest():
    found = families.candidates(families.Ask("auto"), "medium", CATALOG, Prioritization(), Needs())
    assert labels(found) == ["zm@zen", "nm@nvidia", "zm@puter", "cheap-elsewhere@openai",
                             "zl@zen", "nl@nvidia", "nl@puter"]


def test_a_forced_family_then_its_fallbacks_only():
    nvidia = families.candidates(families.Ask("family", family="nvidia"), "medium", CATALOG, Prioritization(), Needs())
    assert labels(nvidia) == ["nm@nvidia", "nl@nvidia", "zm@puter", "nl@puter"]
    zen = families.candidates(families.Ask("family", family="zen"), "low", CATALOG, Prioritization(), Needs())
    assert labels(zen) == ["zl@zen", "zm@zen"]


def test_an_exact_model_in_family_order_not_price():
    ask = families.read("zm", None, CATALOG)
    assert labels(families.candidates(ask, None, CATALOG, Prioritization(), Needs())) == ["zm@zen", "zm@puter"]


def test_families_are_the_catalogs_to_change():
    custom = parse_catalog({**CATALOG.model_dump(by_alias=True, mode="json"),
                            "router": {"families": [{"name": "cheap", "providers": ["puter", "openai"]}]}})
    found = families.candidates(families.Ask("auto"), "medium", custom, Prioritization(), Needs())
    # One family now, cheapest first within it; the rest of the tier after it.
    assert labels(found)[:4] == ["cheap-elsewhere@openai", "zm@puter", "nm@nvidia", "zm@zen"]
    assert families.read("zen", None, custom).kind == "auto"  # no family of that name any more


def test_a_classifier_that_is_not_in_the_catalog_is_a_catalog_error():
    with pytest.raises(Exception, match=r"router\.classifier\.model"):
        parse_catalog({**CATALOG.model_dump(by_alias=True, mode="json"), "router": {"classifier": {"model": "ghost"}}})


# --- the classifier's question and answer ---------------------------------------------------------


@pytest.mark.parametrize(("answer", "tier"), [
    ("high", "high"), ("  Medium.", "medium"), ("Tier: LOW", "low"), ("highest", None), ("", None), ("xhigh", None),
])
def test_the_first_tier_word_of_the_answer(answer, tier):
    assert tier_in(answer, ["low", "medium", "high"]) == tier


def test_the_classifier_reads_the_newest_user_text_and_the_tiers():
    call = Call(system="", messages=[UserMessage(value="old"), ContentMessage(value="a"), UserMessage(value="new!")])
    assert prompt_text(call, 3) == "ew!"
    text = instructions(["low", "high"])
    assert "- low:" in text and "- high:" in text and "medium" not in text
