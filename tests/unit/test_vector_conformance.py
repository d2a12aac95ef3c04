"""Issue 35: the conformance suite every embedding and rerank wire runs, in process, with no emulator.

Parametrised over `momor.providers.registry`: each wire a catalog wire embeds or reranks over
(`embeds_over`, `reranks_over`) is called through Momor's own exchange (its `build_embed` or
`build_rerank`, `transport.post_whole`, its parser, its `map_error`) against its strict fake
(`tests/fakes/<wire>.py`, `vectors = True`) served in process over ASGI, with each setup the fake
declares. Each case: a whole answer (vectors in input order, of the length asked; results best
first), token ids refused or carried, the fake's refusal of what the real API refuses, each error
class, and a malformed or cut answer.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from momor.catalog import EmbeddingSpec, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.providers import wire_for
from momor.providers.base import Target
from momor.providers.registry import REGISTRY
from momor.providers.transport import post_whole
from momor.routing.policy import classify
from momor.vectors import EmbedCall, Embedded, RerankCall, as_floats, length
from tests.fakes import FakeState, create_app, cut, fail, malformed
from tests.fakes.interface import Setup, fake_module

FAKE_URL = "http://fake.test"
EMBEDDING = {f.embeds_over for f in REGISTRY if f.embeds_over}
RERANKING = {f.reranks_over for f in REGISTRY if f.reranks_over}


def _cases(names: set[str]) -> list[Any]:
    return [pytest.param((facts, setup), id=f"{facts.name}:{setup.model}")
            for facts in REGISTRY if facts.name in names for setup in fake_module(facts.name).SETUPS]


EMBED_CASES = _cases(EMBEDDING)
RERANK_CASES = _cases(RERANKING)


class Harness:
    def __init__(self, facts: Any, setup: Setup, kind: str) -> None:
        self.facts, self.setup = facts, setup
        self.state = FakeState()
        self.state.tokens.update(dict.fromkeys(setup.tokens, "conformance"))
        self.wire = wire_for(facts.name)
        over = "embeds_over" if kind == "embedding" else "reranks_over"
        listed = next(f.name for f in REGISTRY if getattr(f, over) == facts.name)
        provider = Provider(name=setup.name, wire=listed, baseUrl=f"{FAKE_URL}/{setup.base}", options=setup.options)
        offering = Offering(provider=setup.name, id=setup.model, prices=Prices(input=1, output=0))
        spec = EmbeddingSpec(dimensions=setup.dimensions) if kind == "embedding" else None
        model = Model(name="conformance", publisher=setup.publisher, kind=kind, tier="low", offerings=[offering],
                      embedding=spec)
        self.target = Target(provider, offering, model, setup.key, dict(setup.key_extra))

    async def post(self, request: Any) -> tuple[bytes, dict[str, str]]:
        transport = httpx2.ASGITransport(app=create_app(self.state))
        async with httpx2.AsyncClient(transport=transport) as client:
            return await post_whole(self.wire, request, self.target, client=client)

    async def embed(self, call: EmbedCall) -> Any:
        """One request, or one per input for a wire whose offering takes one (Titan: `batch_limit`),
        as routing/embed.py cuts a call; the parts' vectors in input order."""
        limit = getattr(self.wire, "batch_limit", lambda target: None)(self.target)
        if limit == 1 and len(call.inputs) > 1:
            parts = [await self.embed(call.part([i])) for i in range(len(call.inputs))]
            return Embedded([v for part in parts for v in part.vectors],
                            None if any(p.input_tokens is None for p in parts) else sum(p.input_tokens for p in parts))
        body, headers = await self.post(self.wire.build_embed(call, self.target))
        return self.wire.parse_embed(body, headers, self.target, call)

    async def rerank(self, call: RerankCall) -> Any:
        body, headers = await self.post(self.wire.build_rerank(call, self.target))
        return self.wire.parse_rerank(body, headers, self.target, call)

    def script(self, *steps: Any) -> None:
        self.state.script(self.setup.label, *steps)

    def last(self) -> Any:
        return self.state.requests(self.setup.label)[-1]


@pytest.fixture(params=EMBED_CASES)
def embedding(request: pytest.FixtureRequest) -> Harness:
    return Harness(*request.param, "embedding")


@pytest.fixture(params=RERANK_CASES)
def reranking(request: pytest.FixtureRequest) -> Harness:
    return Harness(*request.param, "rerank")


async def test_vectors_come_back_one_per_input_in_order(embedding: Harness) -> None:
    texts = ["the first input", "second", "and a third one here"]
    done = await embedding.embed(EmbedCall(texts))
    assert embedding.last().status == 200
    assert len(done.vectors) == 3 and all(length(v) == embedding.setup.dimensions for v in done.vectors)
    vectors = [as_floats(v) for v in done.vectors]
    assert len({tuple(v) for v in vectors}) == 3  # each input its own vector, none repeated or swapped
    single = await embedding.embed(EmbedCall([texts[1]]))
    assert as_floats(single.vectors[0]) == vectors[1], "the same input embeds the same whatever its place"
    assert done.input_tokens is None or done.input_tokens > 0


async def test_a_shortened_vector_where_the_model_offers_it(embedding: Harness) -> None:
    if not embedding.setup.shorter:
        pytest.skip("the setup's model has one length")
    done = await embedding.embed(EmbedCall(["shorten me"], dimensions=embedding.setup.shorter))
    assert length(done.vectors[0]) == embedding.setup.shorter


async def test_a_dimension_the_model_does_not_offer_is_refused_by_the_fake(embedding: Harness) -> None:
    with pytest.raises(ProviderError) as info:
        await embedding.embed(EmbedCall(["x"], dimensions=embedding.setup.dimensions + 7))
    assert info.value.upstream_status in (400, 422) and classify(info.value) == "failover"


async def test_token_ids_are_carried_or_the_offering_is_passed_over(embedding: Harness) -> None:
    call = EmbedCall([[15339, 1917]])
    try:
        done = await embedding.embed(call)
    except ProviderError as exc:
        assert exc.kind == "unsupported"
        assert not embedding.state.requests(embedding.setup.label)
        return
    assert length(done.vectors[0]) == embedding.setup.dimensions


@pytest.mark.parametrize(("status", "decision"), [(429, "retry"), (500, "retry"), (503, "retry"),
                                                  (400, "failover"), (401, "failover")])
async def test_errors_are_classified(embedding: Harness, status: int, decision: str) -> None:
    embedding.script(fail(status))
    with pytest.raises(ProviderError) as info:
        await embedding.embed(EmbedCall(["x"]))
    assert info.value.upstream_status == status and classify(info.value) == decision


@pytest.mark.parametrize("step", [malformed(), cut(clean=True)], ids=["malformed", "cut"])
async def test_a_broken_answer_is_an_error_never_a_short_list(embedding: Harness, step: Any) -> None:
    embedding.script(step)
    with pytest.raises(ProviderError) as info:
        await embedding.embed(EmbedCall(["x", "y"]))
    assert info.value.kind in ("protocol", "dropped")


async def test_results_come_back_best_first(reranking: Harness) -> None:
    documents = ["Paris is in France.", "The capital of France is Paris.", "Bananas are yellow."]
    done = await reranking.rerank(RerankCall("What is the capital of France?", documents))
    assert reranking.last().status == 200
    assert sorted(i for i, _ in done.results) == [0, 1, 2]
    scores = [s for _, s in done.results]
    assert scores == sorted(scores, reverse=True) and done.results[0][0] == 1
    top = await reranking.rerank(RerankCall("What is the capital of France?", documents, top_n=1))
    assert [i for i, _ in top.results] == [1]


@pytest.mark.parametrize(("status", "decision"), [(429, "retry"), (500, "retry"), (400, "failover")])
async def test_rerank_errors_are_classified(reranking: Harness, status: int, decision: str) -> None:
    reranking.script(fail(status))
    with pytest.raises(ProviderError) as info:
        await reranking.rerank(RerankCall("q", ["d"]))
    assert info.value.upstream_status == status and classify(info.value) == decision


async def test_a_malformed_ranking_is_a_protocol_error(reranking: Harness) -> None:
    reranking.script(malformed())
    with pytest.raises(ProviderError) as info:
        await reranking.rerank(RerankCall("q", ["d"]))
    assert info.value.kind == "protocol"
