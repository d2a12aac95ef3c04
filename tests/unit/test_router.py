"""The router alias's routing steps without a socket: memory bounds and placement, the request's
memory fields, how `model` routes, family order and the classifier's answer (seed 003)."""

from __future__ import annotations

import pytest

from momor.call import Call
from momor.caller_body import CallerBody
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
    call = Call(system="S\n\nD", messages=[UserMessage(value="new")])
    remembered = [{"role": "user", "content": "old"}, {"role": "assistant", "content": "answer"}]
    out, own = memory.with_memory(call, CallerBody(raw, "openai_chat"), remembered,
                                  lambda t: openai.map_messages(t)[1])
    assert [m["content"] for m in own.body["messages"]] == ["S", "D", "old", "answer", "new"]
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
    ({"context": "FULL"}, "context"), ({"context": 0}, "context"),
    ({"chat_id": ""}, "chat_id"), ({"thread_id": ["a"]}, "thread_id"),
    ({"chat_id": "c" * (memory.CHAT_ID_MAX + 1)}, "chat_id"), ({"new_chat": 1}, "new_chat"),
    # Outside the safe set: non-Latin-1 (a header cannot carry it), control characters, separators.
    ({"chat_id": "чат-1"}, "chat_id"), ({"conversation_id": "a\r\nX-Evil: 1"}, "conversation_id"),
    ({"memory_id": "a b"}, "memory_id"), ({"thread_id": "a#b"}, "thread_id"), ({"chat_id": "a/b"}, "chat_id"),
    ({"chat_id": "é"}, "chat_id"),
])
def test_bad_memory_fields_name_the_field(body, param):
    with pytest.raises(RoutingError) as caught:
        read_memory(body)
    assert caught.value.param == param and caught.value.detail.startswith(param)
    assert all(str(v) not in caught.value.detail for v in body.values() if v)  # caller text is not echoed


def test_null_means_not_given():
    assert read_memory({"context": None, "new_chat": None, "chat_id": None, "conversation_id": None,
                        "thread_id": "t", "memory_id": None}) == memory.Ask("t", "auto", False)
    assert read_memory({"context": None}) == read_memory({})


def test_new_chat_wins_over_a_chat_id():
    assert read_memory({"new_chat": True, "chat_id": "a"}) == memory.Ask(None, "auto", True)
    assert read_memory({"new_chat": False, "chat_id": "a"}) == memory.Ask("a", "auto", False)
    with pytest.raises(RoutingError):  # the chat id is still checked
        read_memory({"new_chat": True, "chat_id": "a b"})


def test_the_safe_set_is_what_the_docs_say():
    assert read_memory({"chat_id": "Ab_9.z:x-1"}).chat_id == "Ab_9.z:x-1"


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


# --- seed 003 does not filter by age; a forced zen picks at random -------------------------------


AGED = parse_catalog({
    "cutoff": "2025-01-01",
    "providers": [{"name": n, "wire": "openai_chat", "baseUrl": "http://127.0.0.1:1/v1"}
                  for n in ("zen", "nvidia", "puter", "openai")],
    "models": [
        {**_model("z1", "medium", ("zen", 0.0)), "released": "2024-01-01"},
        {**_model("z2", "medium", ("zen", 0.1)), "released": "2024-01-01", "deprecated": True},
        {**_model("z3", "medium", ("zen", 0.2)), "released": "2024-01-01"},
        {**_model("zl", "low", ("zen", 0.0)), "released": "2024-01-01"},
        {**_model("nv", "medium", ("nvidia", 0.0)), "released": "2024-01-01"},
        {**_model("pu", "low", ("puter", 0.0)), "released": "2024-01-01"},
        {**_model("new", "medium", ("openai", 0.0)), "released": "2025-06-01"},
    ],
    "router": {"families": [{"name": "zen", "providers": ["zen"], "pick": "random"},
                            {"name": "nvidia", "providers": ["nvidia"], "fallback": ["puter"]},
                            {"name": "puter", "providers": ["puter"]}]},
})


def test_the_router_reaches_models_before_the_cutoff_and_deprecated_ones():
    found = families.candidates(families.Ask("auto"), "medium", AGED, Prioritization(), Needs())
    assert labels(found)[:5] == ["z1@zen", "z2@zen", "z3@zen", "nv@nvidia", "new@openai"]
    nvidia = families.candidates(families.Ask("family", family="nvidia"), "medium", AGED, Prioritization(), Needs())
    assert labels(nvidia) == ["nv@nvidia", "pu@puter"]
    # The caller's own limits still hold.
    strict = Prioritization(deprecated=False)
    assert "z2@zen" not in labels(families.candidates(families.Ask("auto"), "medium", AGED, strict, Needs()))


class Reversing:
    """A random source that reverses what it shuffles: an order no price sort gives."""

    def shuffle(self, items):
        items.reverse()


def test_a_forced_zen_tries_the_tiers_models_in_a_random_order_then_its_other_tiers():
    ask = families.Ask("family", family="zen")
    found = families.candidates(ask, "medium", AGED, Prioritization(), Needs(), rng=Reversing())
    assert labels(found) == ["z3@zen", "z2@zen", "z1@zen", "zl@zen"]
    import random

    firsts = {families.candidates(ask, "medium", AGED, Prioritization(), Needs(), rng=random.Random(seed))[0]
              .model.name for seed in range(40)}
    assert firsts == {"z1", "z2", "z3"}  # every model of the tier is picked first by some seed
    # A family that picks the cheapest does just that.
    cheapest = parse_catalog({**AGED.model_dump(by_alias=True, mode="json"),
                              "router": {"families": [{"name": "zen", "providers": ["zen"]}]}})
    assert labels(families.candidates(ask, "medium", cheapest, Prioritization(), Needs(), rng=Reversing()))[0] \
        == "z1@zen"


def test_the_router_module_random_source_is_the_default(monkeypatch):
    monkeypatch.setattr(families, "RANDOM", Reversing())
    found = families.candidates(families.Ask("family", family="zen"), "medium", AGED, Prioritization(), Needs())
    assert labels(found)[0] == "z3@zen"


def test_a_providers_own_model_id_names_its_model_and_its_variants():
    assert families.read("z1@zen", None, AGED) == families.Ask("model", selectors=(
        families.Selector(name="z1", written="z1@zen"),))
    listed = parse_catalog({**AGED.model_dump(by_alias=True, mode="json"), "models": [
        {**_model("ds", "medium", ("zen", 0.0)), "capabilities": {"reasoning": ["low", "max"]},
         "offerings": [{"provider": "zen", "id": "ds-free", "prices": {"input": 0, "output": 0}}]}]})
    assert families.read("DS-free", None, listed).selectors[0].name == "ds"
    assert families.read("ds-free:max", None, listed).variant == "max"


def test_a_family_model_outside_the_routers_tiers_is_a_catalog_error():
    doc = AGED.model_dump(by_alias=True, mode="json")
    doc["models"][0]["tier"] = "free"
    with pytest.raises(Exception, match=r"models\.?\[?0\]?\.tier: 'free' is not one of router\.tiers"):
        parse_catalog(doc)
    doc["router"]["tiers"] = ["free", "low", "medium"]
    assert parse_catalog(doc).models[0].tier == "free"  # one vocabulary again
    doc["models"][0]["offerings"][0]["provider"] = "openai"
    doc["router"]["tiers"] = ["low", "medium"]
    assert parse_catalog(doc).models[0].tier == "free"  # not a family's model: no router rule
    with pytest.raises(Exception, match=r"defaultTier: 'high' is not one of tiers"):
        parse_catalog({**doc, "router": {"tiers": ["low"], "defaultTier": "high"}})


# --- the shipped catalogs, with their own router settings ----------------------------------------

from pathlib import Path  # noqa: E402

from momor.catalog import load_catalog_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "infra" / "example-catalog.json", ROOT / "infra" / "example-catalog.real.json"]
SEED_ZEN = {  # seed 003's table: Zen model name -> its variants
    "deepseek-v4-flash-free": ["low", "medium", "high", "max"], "mimo-v2.5-free": ["low", "medium", "high"],
    "big-pickle": [], "laguna-s-2.1-free": ["low", "medium", "high"],
    "nemotron-3-ultra-free": ["low", "medium", "high"], "north-mini-code-free": ["none", "high"],
}


@pytest.fixture(params=SHIPPED, ids=lambda p: p.name)
def shipped(request):
    return load_catalog_file(request.param)


def first(ask, tier, catalog):
    return families.candidates(ask, tier, catalog, Prioritization(), Needs(), rng=Reversing())


def test_shipped_families_serve_every_tier_zen_first(shipped):
    assert shipped.router.classifier is not None
    for tier in shipped.router.tiers:
        found = first(families.read("auto", None, shipped), tier, shipped)
        assert (found[0].provider.name, found[0].model.tier) == ("zen", tier)
        forced = first(families.read("zen", None, shipped), tier, shipped)
        assert (forced[0].provider.name, forced[0].model.tier) == ("zen", tier)
        assert {c.provider.name for c in forced} == {"zen"}
        for word in ("nvidia-auto", "nvidia"):
            nvidia = first(families.read(word, None, shipped), tier, shipped)
            assert nvidia[0].provider.name == "nvidia" and {c.provider.name for c in nvidia} == {"nvidia", "puter"}
        puter = first(families.read("puter", None, shipped), tier, shipped)
        assert {c.provider.name for c in puter} == {"puter"}


def test_shipped_seed_zen_names_are_exact_models_with_their_variants(shipped):
    for zen_id, variants in SEED_ZEN.items():
        ask = families.read(zen_id, None, shipped)
        assert ask.kind == "model", zen_id
        found = first(ask, None, shipped)
        assert (found[0].provider.name, found[0].offering.id) == ("zen", zen_id)
        assert found[0].model.capabilities.reasoning == variants
        for variant in variants:
            assert families.read(f"{zen_id}:{variant}", None, shipped).variant == variant


# --- memory: a resent history is not remembered twice; one big turn never costs the thread -------


def ex(i):
    return [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]


reads: list[int] = []
"""How many messages each load of `thread_store` returned."""


@pytest.fixture
def thread_store(monkeypatch):
    """routing/memory.py over a dict instead of DynamoDB, read the way the store reads: the newest
    messages asked for (at least what was read before), `more` when older ones are left unread."""
    from momor.store import memory as store

    threads: dict[str, list] = {}
    reads.clear()

    async def load(caller, chat, messages, thread=None):
        stored = threads.get(chat, [])[-store.HORIZON_MESSAGES:]
        n = min(max(messages, len(thread.turns) if thread else 0), len(stored))
        reads.append(n)
        return store.Thread(list(stored[len(stored) - n:]), more={} if n < len(stored) else None)

    # A turn is kept as a deferred write (store/deferred.py): its step names the thread and the turn,
    # and the step's applier is the thread's append here.
    def turn_put(caller, chat, new):
        return store.TURN_STEP, {"chat": chat, "new": new}

    async def put_turn(args, deadline):
        threads[args["chat"]] = [*threads.get(args["chat"], []), *store.bounded(args["new"])]

    monkeypatch.setattr(store, "load", load)
    monkeypatch.setattr(store, "turn_put", turn_put)
    monkeypatch.setattr(store, "runs", lambda: {store.TURN_STEP: put_turn})
    return threads


async def turn(threads, messages, answer="ok", chat="c", mode="auto"):
    """One router call's memory steps: what is injected; the answer kept afterwards."""
    from momor.events import Assembler, Delta, PartStart

    found = await memory.recall(memory.Ask(chat, mode), "caller", chat, messages)
    assembler = Assembler()
    assembler.add(PartStart(index=0, kind="content"))
    assembler.add(Delta(index=0, text=answer))
    await memory.remember(found, assembler)
    return found.injected


async def test_a_resent_history_is_neither_injected_nor_stored_again(thread_store):
    sent = [{"role": "system", "content": "rules"}, {"role": "user", "content": "q0"}]
    assert await turn(thread_store, sent, "a0") == []
    # The SDK's loop: the whole conversation again, plus the new question.
    sent += [{"role": "assistant", "content": "a0"}, {"role": "user", "content": "q1"}]
    assert await turn(thread_store, sent, "a1") == []
    sent += [{"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]
    assert await turn(thread_store, sent, "a2") == []
    assert thread_store["c"] == [*ex(0), *ex(1), *ex(2)]  # each turn once
    # A caller that sends only the new turn still gets the thread.
    assert await turn(thread_store, [{"role": "user", "content": "q3"}], "a3") == [*ex(0), *ex(1), *ex(2)]
    assert thread_store["c"] == [*ex(0), *ex(1), *ex(2), *ex(3)]


async def test_a_trimmed_resend_gets_the_older_turns_it_left_out(thread_store):
    thread_store["c"] = [*ex(0), *ex(1), *ex(2)]
    injected = await turn(thread_store, [*ex(2), {"role": "user", "content": "q3"}])
    assert injected == [*ex(0), *ex(1)]  # before what it resent, not again
    assert thread_store["c"] == [*ex(0), *ex(1), *ex(2), {"role": "user", "content": "q3"},
                                 {"role": "assistant", "content": "ok"}]


async def test_history_of_the_callers_own_before_the_resent_turns_injects_nothing(thread_store):
    thread_store["c"] = [*ex(0), *ex(1)]
    assert await turn(thread_store, [*ex(9), *ex(1), {"role": "user", "content": "q2"}]) == []


async def test_the_callers_last_turn_is_always_new(thread_store):
    thread_store["c"] = [{"role": "user", "content": "same"}]  # an answer with no text kept no turn
    assert await turn(thread_store, [{"role": "user", "content": "same"}]) == [{"role": "user", "content": "same"}]
    assert thread_store["c"][-2:] == [{"role": "user", "content": "same"}, {"role": "assistant", "content": "ok"}]


async def test_only_the_modes_window_is_read_when_the_caller_sends_its_new_turn(thread_store):
    thread_store["c"] = [m for i in range(50) for m in ex(i)]
    assert await turn(thread_store, [{"role": "user", "content": "next"}]) == [m for i in range(46, 50)
                                                                             for m in ex(i)]
    assert reads == [memory.BOUNDS["auto"].messages]  # 8 of the thread's 100 messages
    reads.clear()
    await turn(thread_store, [{"role": "user", "content": "more"}], mode="full")
    assert reads == [memory.BOUNDS["full"].messages]


async def test_a_trimmed_resend_of_a_long_thread_reads_back_to_the_older_turns_it_left_out(thread_store):
    thread_store["c"] = [m for i in range(20) for m in ex(i)]
    # The caller resends the last 3 exchanges: the 4 before them are injected, read behind them.
    injected = await turn(thread_store, [*ex(17), *ex(18), *ex(19), {"role": "user", "content": "q20"}])
    assert injected == [m for i in range(13, 17) for m in ex(i)]
    assert reads == [8, 6 + 8]
    assert thread_store["c"][-2:] == [{"role": "user", "content": "q20"}, {"role": "assistant", "content": "ok"}]


async def test_the_sdk_loop_on_a_long_thread_reads_what_it_resent_never_past_the_horizon(thread_store):
    from momor.store import memory as store

    history = [m for i in range(20) for m in ex(i)]
    thread_store["c"] = list(history)
    assert await turn(thread_store, [*history, {"role": "user", "content": "q20"}], "a20") == []
    assert reads == [8, 40] and thread_store["c"] == [*history, *ex(20)]  # only the new turn kept
    # Beyond the horizon the thread is what the last 64 messages were: the resend still matches.
    history = [m for i in range(50) for m in ex(i)]
    thread_store["c"] = list(history)
    reads.clear()
    assert await turn(thread_store, [*history, {"role": "user", "content": "q50"}], "a50") == []
    assert reads == [8, store.HORIZON_MESSAGES] and thread_store["c"] == [*history, *ex(50)]


def test_resent_finds_the_latest_run_ending_with_the_threads_last_turn():
    thread = [*ex(0), *ex(1)]
    assert memory.resent(thread, [*ex(0), *ex(1), {"role": "user", "content": "n"}]) == (4, 4)
    assert memory.resent(thread, [*ex(1), {"role": "user", "content": "n"}]) == (2, 2)
    assert memory.resent(thread, [{"role": "user", "content": "a1"}]) == (0, 0)  # a role must match too
    assert memory.resent([], ex(0)) == (0, 0)


async def test_one_big_turn_is_stored_shortened_and_marked_and_the_history_stays(thread_store):
    thread_store["c"] = [*ex(0), *ex(1)]
    huge = "word " * 100_000  # 500 KB: more than a thread keeps at all
    await turn(thread_store, [{"role": "user", "content": huge}], "seen")
    kept = thread_store["c"]
    assert kept[:4] == [*ex(0), *ex(1)]  # the earlier history stays
    big = kept[4]["content"]
    assert len(big.encode()) <= memory.TURN_BYTES and big.startswith("word word")
    assert "[Momor memory: this turn was" in big and "shortened" in big
    # ... and the next call, in compact mode, still carries the turns before it.
    injected = await turn(thread_store, [{"role": "user", "content": "next"}])
    assert injected[:4] == [*ex(0), *ex(1)] and injected[-1] == {"role": "assistant", "content": "seen"}
    assert memory._cost(injected[4]) <= memory.BOUNDS["auto"].tokens // 2


def test_shortened_leaves_small_turns_alone_and_counts_left_out_parts():
    small = {"role": "user", "content": "hi"}
    assert memory.shortened(small, 100) is small
    parts = [{"type": "text", "text": "look " * 400},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}}]
    out = memory.shortened({"role": "user", "content": parts}, 1000)
    assert len(orjson_dumps(out["content"])) <= 1000 and "1 non-text part(s)" in out["content"]
    quoted = memory.shortened({"role": "user", "content": '"' * 3000}, 1000)  # JSON doubles each quote
    assert len(orjson_dumps(quoted["content"])) <= 1000


def orjson_dumps(value):
    import orjson

    return orjson.dumps(value)


# --- roles the router does not know --------------------------------------------------------------


def test_unknown_roles_are_read_as_user_or_assistant_whatever_json_they_are():
    from momor.dialects.openai.router_route import _known_roles

    messages = [{"role": "system", "content": "s"}, {"role": "Model", "content": "m"}, {"role": ["x"], "content": "l"},
                {"role": {"a": 1}, "content": "d"}, {"role": None, "content": "n"}, {"content": "r"},
                {"role": 7, "content": "i"}, {"role": "human", "content": "h"}, "not an object"]
    mapped = _known_roles(messages)
    assert [m["role"] if isinstance(m, dict) else m for m in mapped] == [
        "system", "assistant", "user", "user", "user", "user", "user", "user", "not an object"]
    assert mapped[2] == {"role": "user", "content": "l"} and messages[2]["role"] == ["x"]  # the body untouched
    assert _known_roles([{"role": "user", "content": "u"}, {"role": "tool", "content": "t"}]) is None
