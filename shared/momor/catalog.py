"""The catalog: which models exist, who serves them, through which wire, at what price.

A user-facing contract: a JSON document validated on load, with errors that name the bad field.
`catalog.schema.json` beside this module is generated from these classes (`python -m
momor.catalog --schema`) and a test keeps the two equal.

Prices are US dollars per million tokens. Parameter names in `Provider.parameters` are the native
dialect's names (seed 000 `parameters`: maxTokens, temperature, topP, ...).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import MomorError
from .providers.registry import CATALOG_WIRES

Tier = Literal["free", "low", "medium", "high", "xhigh", "tierless"]
TIERS: tuple[str, ...] = ("free", "low", "medium", "high", "xhigh", "tierless")
Kind = Literal["chat", "decision", "transcription", "embedding", "rerank"]
"""What a model is for, and so which route serves it (seed 000): /models, /models/chat and
/models/two reach chat models only, /models/decision decision models, /models/transcribe
transcription models; /v1/embeddings and /models/embed embedding models, /v1/rerank, /v2/rerank and
/models/rerank rerank models."""
WIRES: tuple[str, ...] = CATALOG_WIRES
"""The wires a provider may name: providers/registry.py lists them."""


class _Strict(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)


class Prices(_Strict):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(None, alias="cacheRead", ge=0)
    cache_write: float | None = Field(None, alias="cacheWrite", ge=0)
    """A cache write kept five minutes (Anthropic: 1.25 times the input price), and any write a
    provider reports without a lifetime; left out, the input price."""
    cache_write_1h: float | None = Field(None, alias="cacheWrite1h", ge=0)
    """A cache write kept one hour (Anthropic: twice the input price, seed 000's Prompt caching);
    left out, twice the input price."""
    per_minute: float | None = Field(None, alias="perMinute", ge=0)
    """US dollars per minute of audio (transcription models priced by the minute); when given, a
    transcription is billed by its duration and the token prices apply only to reported tokens."""
    per_search: float | None = Field(None, alias="perSearch", ge=0)
    """US dollars per search (rerank models billed by the search, as Cohere and Bedrock bill them): one
    query with up to 100 documents, a search more for each further 100 started (the provider's own count
    of search units where it reports one). The token prices apply to tokens it reports beside."""


class Offering(_Strict):
    """One provider serving one model."""

    provider: str
    """A provider's name from `providers`."""
    id: str
    """The provider's own model id."""
    prices: Prices


class Capabilities(_Strict):
    tools: bool = False
    structured_output: Literal["none", "jsonObject", "jsonSchema"] = Field("none", alias="structuredOutput")
    reasoning: list[str] = Field(default_factory=list)
    """Reasoning depths the model takes (low, medium, high, ...); empty if it does not reason."""
    max_output_tokens: int | None = Field(None, alias="maxOutputTokens", ge=1)
    context_window: int | None = Field(None, alias="contextWindow", ge=1)
    input: list[Literal["text", "image", "pdf", "audio"]] = Field(default_factory=lambda: ["text"])
    prefill: bool = False
    """Accepts a final assistant message to continue from (used by stream rollover)."""


class EmbeddingSpec(_Strict):
    """What an embedding model's vectors are (catalog `models[].embedding`, required for kind embedding)."""

    dimensions: int = Field(ge=1)
    """The vector's native length."""
    shorten_to: list[int] = Field(default_factory=list, alias="shortenTo")
    """Shorter lengths the model can answer with (a caller's `dimensions`), e.g. [256, 512, 1024]."""
    shorten_to_any: bool = Field(False, alias="shortenToAny")
    """Any length from 1 up to `dimensions` (OpenAI's text-embedding-3 models, Gemini's)."""
    max_inputs: int | None = Field(None, alias="maxInputs", ge=1)
    """Inputs one request may carry, where the model takes fewer than its wire does (Vertex's
    gemini-embedding-001 takes 1); a call with more is sent in parts (routing/embed.py)."""
    max_input_tokens: int | None = Field(None, alias="maxInputTokens", ge=1)
    """The tokens of one input the model reads (more are cut or refused, as the provider does); the
    budget's hold counts no more than this per input."""

    @model_validator(mode="after")
    def _shorter(self) -> EmbeddingSpec:
        longer = [d for d in self.shorten_to if not 1 <= d < self.dimensions]
        if longer:
            raise ValueError(f"shortenTo: {longer[0]} is not shorter than dimensions ({self.dimensions})")
        return self

    def offers(self, dimensions: int | None) -> bool:
        """Whether the model answers vectors of this length (None: its native one)."""
        if dimensions is None or dimensions == self.dimensions:
            return True
        return dimensions in self.shorten_to or (self.shorten_to_any and 1 <= dimensions < self.dimensions)

    def described(self) -> str:
        """The lengths it offers, for a refusal."""
        if self.shorten_to_any:
            return f"1 to {self.dimensions}"
        return ", ".join(str(d) for d in sorted({*self.shorten_to, self.dimensions}))


class RerankSpec(_Strict):
    """What a rerank model takes (catalog `models[].rerank`)."""

    max_documents: int | None = Field(None, alias="maxDocuments", ge=1)
    """Documents one request may carry; a call with more is refused (400) before any provider is asked."""


class Model(_Strict):
    name: str
    """The canonical name."""

    @property
    def public_id(self) -> str:
        """How the dialects name the model: publisher/name in lowercase (seed 001; GET /models)."""
        return f"{self.publisher}/{self.name}".lower()

    publisher: str
    """Who made it (the seeds' ownedBy)."""
    kind: Kind = "chat"
    """chat (the default), decision, transcription, embedding or rerank: each route serves only its own kind."""
    tier: Tier | None = None
    """A model with no tier is not yet classified and is never served."""
    released: dt.date | None = None
    deprecated: bool = False
    capabilities: Capabilities = Field(default_factory=Capabilities)
    offerings: list[Offering] = Field(min_length=1)
    hedge: bool = True
    """Whether a late first token from this model starts the next candidate beside it
    (routing/hedge.py); false for a model whose first token is slow by nature (long reasoning)."""
    embedding: EmbeddingSpec | None = None
    """kind embedding: its vectors' dimensions and its per-request limits (required for that kind)."""
    rerank: RerankSpec | None = None
    """kind rerank: its per-request limits (optional)."""

    @model_validator(mode="after")
    def _kind_facts(self) -> Model:
        if self.kind == "embedding" and self.embedding is None:
            raise ValueError("embedding: an embedding model says what its vectors are (dimensions, ...)")
        if self.embedding is not None and self.kind != "embedding":
            raise ValueError(f"embedding: only an embedding model has one, not a {self.kind} model")
        if self.rerank is not None and self.kind != "rerank":
            raise ValueError(f"rerank: only a rerank model has one, not a {self.kind} model")
        return self


class Provider(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*(@[a-z0-9][a-z0-9_.-]*)?$")
    """A root such as `azure`, or `root@region` such as `azure@eu`."""
    wire: str = Field(json_schema_extra={"enum": list(WIRES)})
    """The wire protocol module, one of `WIRES` (providers/registry.py)."""
    base_url: str = Field(alias="baseUrl", pattern=r"^https?://")
    parameters: list[str] = Field(default_factory=list)
    """The native parameter names this provider honours; others are left off its requests."""
    zdr: bool = False
    """Momor's own keys for this provider are covered by a zero-data-retention agreement."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Static headers sent on every request (never secrets: keys come from the keys secret)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Wire-specific settings (see each wire module's docstring)."""
    caller_resources: list[Literal["data_sources", "file_search", "code_interpreter", "container", "mcp_servers"]] = (
        Field(default_factory=list, alias="callerResources"))
    """Provider-side resources a caller's passthrough body may name on the deployment's own keys
    (routing/resources.py): Azure `data_sources`, Responses `file_search` and `code_interpreter` with
    a container or files, Anthropic `container` and `mcp_servers`. Left out: none (a 400 naming the
    field); with a key the caller sent they always pass."""

    @property
    def root(self) -> str:
        return self.name.split("@", 1)[0]

    @model_validator(mode="after")
    def _known_wire(self) -> Provider:
        if self.wire not in WIRES:
            raise ValueError(f"wire {self.wire!r} is not one of {', '.join(WIRES)}")
        return self


class RouterFamily(_Strict):
    """A family of providers the router prefers, in the order `router.families` lists them."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """What a caller writes to force it: `<name>` or `<name>-auto` as the model."""
    providers: list[str] = Field(min_length=1)
    """Provider names or roots (a root stands for its regions)."""
    fallback: list[str] = Field(default_factory=list)
    """Families that back this one up when it is forced (NVIDIA falls back to Puter by default)."""
    pick: Literal["cheapest", "random"] = "cheapest"
    """How the family, when forced, orders its models of the classified tier: cheapest first, or
    in a random order (seed 003: `zen` picks a random Zen model from the tier)."""


class RouterClassifier(_Strict):
    """The model that reads a prompt and names the tier to serve it with."""

    model: str
    """A model name from `models` (its offerings are tried in family order)."""
    max_tokens: int = Field(16, alias="maxTokens", ge=1)
    temperature: float = Field(0.0, ge=0)
    """Near 0 for a repeatable answer (a wire that refuses 0 raises it itself, e.g. NVIDIA's clamp)."""
    prompt_chars: int = Field(4000, alias="promptChars", ge=1)
    """The last characters of the caller's prompt the classifier is shown."""


def _default_families() -> list[RouterFamily]:
    return [
        RouterFamily(name="zen", providers=["zen"], pick="random"),
        RouterFamily(name="nvidia", providers=["nvidia"], fallback=["puter"]),
        RouterFamily(name="puter", providers=["puter"]),
    ]


class RouterSettings(_Strict):
    """The router alias (`POST /router/v1/chat/completions`, seed 003): families, classifier, tiers."""

    families: list[RouterFamily] = Field(default_factory=_default_families)
    """Preferred provider families, in order (default: zen, then nvidia, then puter)."""
    classifier: RouterClassifier | None = None
    """None: every auto-routed call is served with `defaultTier` (the record says so)."""
    tiers: list[Tier] = Field(default_factory=lambda: ["low", "medium", "high"], min_length=1)
    """The tiers the classifier chooses among."""
    default_tier: Tier = Field("medium", alias="defaultTier")
    """Serves a call whose classifier failed or answered something that is not one of `tiers`."""

    @model_validator(mode="after")
    def _consistent(self) -> RouterSettings:
        names = [f.name for f in self.families]
        if len(set(names)) != len(names):
            raise ValueError("families: names must be unique")
        for i, family in enumerate(self.families):
            for name in family.fallback:
                if name not in names:
                    raise ValueError(f"families[{i}].fallback: {name!r} is not a family")
        if self.default_tier not in self.tiers:
            raise ValueError(f"defaultTier: {self.default_tier!r} is not one of tiers ({', '.join(self.tiers)})")
        return self


class Catalog(_Strict):
    version: Literal[1] = 1
    cutoff: dt.date | None = None
    """tier/auto/* selectors leave out models released on or before this date (unless maxAge lets them in)."""
    providers: list[Provider]
    models: list[Model]
    router: RouterSettings = Field(default_factory=RouterSettings)
    """How the router alias routes (seed 003)."""

    @model_validator(mode="after")
    def _consistent(self) -> Catalog:
        names = [p.name for p in self.providers]
        if len(set(names)) != len(names):
            raise ValueError("provider names must be unique")
        models = [m.name for m in self.models]
        if len(set(models)) != len(models):
            raise ValueError("model names must be unique")
        known = set(names)
        for i, model in enumerate(self.models):
            for j, offering in enumerate(model.offerings):
                if offering.provider not in known:
                    raise ValueError(
                        f"models[{i}].offerings[{j}].provider: {offering.provider!r} is not in providers"
                    )
        classifier = self.router.classifier
        if classifier is not None and classifier.model.lower() not in {m.lower() for m in models}:
            raise ValueError(f"router.classifier.model: {classifier.model!r} is not in models")
        self._family_tiers()
        return self

    def _family_tiers(self) -> None:
        """The router's tiers and its families' models speak one vocabulary: a chat model a family
        serves carries one of `router.tiers`, else the classifier could never name its tier and the
        family would reach it only as a last resort (seed 003: Zen and NVIDIA are checked first)."""
        tiers = self.router.tiers
        entries = {p for f in self.router.families for p in f.providers}
        family_providers = {p.name for p in self.providers if p.name in entries or p.root in entries}
        for i, model in enumerate(self.models):
            if model.kind != "chat" or model.tier is None or model.tier in tiers:
                continue
            served_by = sorted({o.provider for o in model.offerings} & family_providers)
            if served_by:
                raise ValueError(
                    f"models[{i}].tier: {model.tier!r} is not one of router.tiers ({', '.join(tiers)}), and "
                    f"{model.name!r} is served by the router family provider {served_by[0]!r}"
                )

    def provider(self, name: str) -> Provider:
        return self._providers_by_name()[name]

    def _providers_by_name(self) -> dict[str, Provider]:
        cached = self.__dict__.get("_by_name")
        if cached is None:
            cached = {p.name: p for p in self.providers}
            object.__setattr__(self, "_by_name", cached)  # frozen model: a private, derived cache
        return cached

    def knows_provider(self, name: str) -> bool:
        """A root or name@region this catalog serves."""
        return any(p.name == name or p.root == name for p in self.providers)


class CatalogError(MomorError):
    """The catalog document is invalid; detail names the field."""

    status = 500


def parse_catalog(raw: bytes | str | dict[str, Any]) -> Catalog:
    try:
        if isinstance(raw, dict):
            return Catalog.model_validate(raw)
        return Catalog.model_validate_json(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(document)"
            problems.append(f"{where}: {err['msg']}")
        raise CatalogError("Invalid catalog: " + "; ".join(problems)) from None


def load_catalog_file(path: str | Path) -> Catalog:
    return parse_catalog(Path(path).read_bytes())


SCHEMA_PATH = Path(__file__).with_name("catalog.schema.json")


def json_schema() -> dict[str, Any]:
    schema = Catalog.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Momor catalog"
    return schema


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    if sys.argv[1:] == ["--schema"]:
        SCHEMA_PATH.write_text(json.dumps(json_schema(), indent=2) + "\n")
    else:
        for arg in sys.argv[1:]:
            load_catalog_file(arg)
            print(f"{arg}: valid")
