"""Issue 35: what the catalog says of embedding and rerank models, and the planner's space and dimension
rules, without a server."""

from __future__ import annotations

import pytest

from momor.catalog import CatalogError, parse_catalog
from momor.errors import RoutingError
from momor.routing.plan import Needs, logging_plans, plan
from momor.routing.selectors import Prioritization, parse_selectors

PROVIDERS = [{"name": "a", "wire": "openai_chat", "baseUrl": "https://a.test"},
             {"name": "b", "wire": "cohere", "baseUrl": "https://b.test"}]


def model(name, provider, **embedding):
    return {"name": name, "publisher": "p", "kind": "embedding", "tier": "low",
            "embedding": {"dimensions": 1024, **embedding},
            "offerings": [{"provider": provider, "id": name, "prices": {"input": 0.1, "output": 0}}]}


CATALOG = parse_catalog({"providers": PROVIDERS, "models": [
    model("first", "a", shortenTo=[256]), {**model("first", "a"), "name": "other"}, model("cohere-one", "b")]})


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "x", "publisher": "p", "kind": "embedding", "tier": "low",
      "offerings": [{"provider": "a", "id": "x", "prices": {"input": 0, "output": 0}}]}, "embedding"),
    (model("x", "a", shortenTo=[2048]), "shortenTo"),
    ({**model("x", "a"), "kind": "chat"}, "only an embedding model"),
])
def test_the_catalog_refuses_an_embedding_model_it_cannot_serve(entry, message):
    with pytest.raises(CatalogError, match=message):
        parse_catalog({"providers": PROVIDERS, "models": [entry]})


def test_an_embedding_plan_stays_in_the_first_models_space():
    selectors = parse_selectors("first", ["other", "cohere-one"])
    with logging_plans() as log:
        planned = plan(CATALOG, selectors, Prioritization(), Needs(), kind="embedding")
    assert [c.model.name for c in planned] == ["first"]
    assert {o.candidate.model.name: o.rule for o in log.left_out.values() if o.rule != "selector"} == {
        "other": "space", "cohere-one": "space"}
    mixed = plan(CATALOG, selectors, Prioritization(), Needs(mixed_spaces=True), kind="embedding")
    assert [c.model.name for c in mixed] == ["first", "other", "cohere-one"]


def test_a_dimension_no_model_offers_is_refused_naming_what_it_offers():
    with pytest.raises(RoutingError, match="first offers 256, 1024"):
        plan(CATALOG, parse_selectors("first", None), Prioritization(), Needs(dimensions=512), kind="embedding")
    kept = plan(CATALOG, parse_selectors("first", ["other"]), Prioritization(),
                Needs(dimensions=256, mixed_spaces=True), kind="embedding")
    assert [c.model.name for c in kept] == ["first"]  # `other` has one length


def test_chat_plans_are_untouched_by_the_embedding_rules():
    chat = parse_catalog({"providers": PROVIDERS, "models": [
        {"name": "c1", "publisher": "p", "tier": "low",
         "offerings": [{"provider": "a", "id": "c1", "prices": {"input": 1, "output": 1}}]},
        {"name": "c2", "publisher": "p", "tier": "low",
         "offerings": [{"provider": "b", "id": "c2", "prices": {"input": 2, "output": 2}}]}]})
    assert [c.model.name for c in plan(chat, parse_selectors("c1", ["c2"]), Prioritization())] == ["c1", "c2"]
