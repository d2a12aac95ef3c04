"""The wire registry: every wire Momor speaks, and what the rest of Momor needs to know about it.

One entry per wire, declared here beside its module path so that knowing a wire's facts never
imports the wire: `catalog.py` (imported by every function at cold start) reads the names, and
routing reads the facts, without paying for a wire module a Lambda may never call. Everything
else is derived from this table: `catalog.WIRES` and the catalog schema's `wire` enum, the media
each wire takes by URL (routing/conversion.py), which wire a provider's transcription goes over
(routing/transcribe.py), which wire it embeds and reranks over and how many inputs one request of
that wire carries (routing/embed.py, routing/rerank.py), which wires answer several choices
(routing/plan.py), which count tokens (routing/count.py), and the wires the conformance suite runs
(tests/unit/test_wire_conformance.py).

Adding a wire is its module (exposing `WIRE`) plus one `WireFacts` line below; a test checks that
each module agrees with its line (its `WIRE.name`, its token counting, the options it reads).
"""

from __future__ import annotations

_ENDPOINT_OPTIONS = ("authHeader", "path", "query", "values")
"""Read by `endpoint.py` for the wires that place their request through it."""


class WireFacts:
    """One wire's facts. A plain class, not a dataclass: building a dataclass costs a millisecond of
    every cold start, and this module is imported by all of them."""

    __slots__ = ("answers_choices", "batch", "batch_tokens", "built_in_tools", "counts_tokens", "embeds_over",
                 "in_catalog", "module", "name", "options", "reasoning", "reply_timeout", "reranks_over",
                 "transcribes_over", "url_media")

    def __init__(self, name: str, module: str, *, url_media: frozenset[str] = frozenset(),
                 answers_choices: bool = False, transcribes_over: str | None = None, counts_tokens: bool = False,
                 reasoning: bool = False, options: tuple[str, ...] = (), in_catalog: bool = True,
                 built_in_tools: bool = False, embeds_over: str | None = None, reranks_over: str | None = None,
                 batch: int | None = None, batch_tokens: int | None = None, reply_timeout: bool = False) -> None:
        self.name = name
        """The catalog's `wire` value."""
        self.module = module
        """The module that exposes `WIRE`, imported only when the wire is first called."""
        self.url_media = url_media
        """Media kinds (image, pdf, audio, text) the wire sends by address; any other file given by
        URL is fetched for it first."""
        self.answers_choices = answers_choices
        """Answers as many choices as `n` asks for (Chat Completions' `n`, Gemini's `candidateCount`)."""
        self.transcribes_over = transcribes_over
        """The wire a provider listed under this one transcribes over (None: it cannot transcribe)."""
        self.counts_tokens = counts_tokens
        """The wire has `count_request`/`parse_count`: the offering's own count of a call's tokens."""
        self.reasoning = reasoning
        """The wire carries reasoning (thinking parts, replayed to the provider on the next turn)."""
        self.options = options
        """The catalog `Provider.options` names the wire reads (each documented in its module)."""
        # Not named `catalog`: tests/lambda/aws_usage.py follows attributes by name, and `.catalog`
        # would make every function that imports catalog.py reach the catalog's S3 source.
        self.in_catalog = in_catalog
        """A catalog wire (a provider may name it); False for one reached only through another wire."""
        self.reply_timeout = reply_timeout
        """networkTimeout bounds only the wait for the reply to begin (seed 000: "on Anthropic"), not
        each read after it: a stream's silences keep the idle timeout (routing/watchdog.py)."""
        self.built_in_tools = built_in_tools
        """Runs the provider's own built-in tools (OpenAI Responses' web_search, file_search, ...): a
        call that has one is planned on such offerings only (routing/plan.py, rule `capability`)."""
        self.embeds_over = embeds_over
        """The wire a provider listed under this one embeds over (None: it has no embeddings)."""
        self.reranks_over = reranks_over
        """The wire a provider listed under this one reranks over (None: it has no rerank)."""
        self.batch = batch
        """An embedding wire: the most inputs one request carries (more are sent in parts)."""
        self.batch_tokens = batch_tokens
        """An embedding wire: the most tokens (estimated) one request's inputs may hold together."""

    def __repr__(self) -> str:
        return f"WireFacts({self.name!r})"


REGISTRY: tuple[WireFacts, ...] = (
    WireFacts("openai_chat", "momor.providers.openai_chat", url_media=frozenset({"image"}),
              answers_choices=True, transcribes_over="openai_transcribe", reasoning=True,
              embeds_over="openai_embed", reranks_over="openai_rerank",
              options=("systemRole", "reasoningField", "reasoningDetails", "maxTokensField", "seedField",
                       "streamOptions", "store", "minTemperature", *_ENDPOINT_OPTIONS)),
    WireFacts("anthropic", "momor.providers.anthropic", url_media=frozenset({"image", "pdf"}),
              counts_tokens=True, reasoning=True, options=("beta", "thinking", "structuredOutputs"),
              reply_timeout=True),
    WireFacts("puter", "momor.providers.puter", url_media=frozenset({"image"}), reasoning=True,
              options=("driver", "authHeader")),
    WireFacts("openai_responses", "momor.providers.openai_responses", url_media=frozenset({"image", "pdf"}),
              transcribes_over="openai_transcribe", reasoning=True, options=("store",), built_in_tools=True,
              embeds_over="openai_embed"),
    WireFacts("gemini", "momor.providers.gemini", answers_choices=True, reasoning=True,
              options=("schemas", "thinking"), embeds_over="gemini_embed"),
    WireFacts("vertex", "momor.providers.vertex", reasoning=True, embeds_over="vertex_embed",
              options=("project", "location", "schemas", "thinking", "beta", "structuredOutputs")),
    WireFacts("cohere", "momor.providers.cohere", options=("authHeader",), embeds_over="cohere_embed",
              reranks_over="cohere_rerank"),
    WireFacts("bedrock_converse", "momor.providers.bedrock_converse", embeds_over="bedrock_embed",
              reranks_over="bedrock_rerank"),
    WireFacts("openai_transcribe", "momor.providers.openai_transcribe", in_catalog=False,
              options=_ENDPOINT_OPTIONS),
    # OpenAI's /embeddings: 2048 inputs and 300,000 tokens a request (OpenAI's API reference).
    WireFacts("openai_embed", "momor.providers.openai_embed", in_catalog=False, batch=2048, batch_tokens=300_000,
              options=("embeddingsPath", "dimensionsField", "inputTypes", "authHeader", "query", "values")),
    WireFacts("openai_rerank", "momor.providers.openai_rerank", in_catalog=False,
              options=("rerankPath", "rerankShape", "authHeader", "query", "values")),
    # Cohere's embed v2 takes 96 texts a request (its API reference).
    WireFacts("cohere_embed", "momor.providers.cohere_embed", in_catalog=False, batch=96),
    WireFacts("cohere_rerank", "momor.providers.cohere_rerank", in_catalog=False),
    # Gemini's batchEmbedContents takes 100 requests (its API reference).
    WireFacts("gemini_embed", "momor.providers.gemini_embed", in_catalog=False, batch=100),
    # Vertex AI's predict takes 250 instances and 20,000 tokens a request (its text embeddings reference).
    WireFacts("vertex_embed", "momor.providers.vertex_embed", in_catalog=False, batch=250, batch_tokens=20_000,
              options=("project", "location")),
    # Bedrock's InvokeModel: Cohere Embed takes 96 texts a request, Titan one (its batch_limit).
    WireFacts("bedrock_embed", "momor.providers.bedrock_embed", in_catalog=False, batch=96),
    # bedrock-agent-runtime's Rerank (1000 sources a request: the catalog's rerank.maxDocuments).
    WireFacts("bedrock_rerank", "momor.providers.bedrock_rerank", in_catalog=False),
)

_BY_NAME = {facts.name: facts for facts in REGISTRY}
CATALOG_WIRES: tuple[str, ...] = tuple(facts.name for facts in REGISTRY if facts.in_catalog)


def facts(name: str) -> WireFacts | None:
    """The registered facts of wire `name`; None for a wire this build does not know."""
    return _BY_NAME.get(name)


def answers_choices(name: str) -> bool:
    """Whether wire `name` answers several choices to one request (n); a wire this build does not
    know, no. The planner keeps only such offerings for n > 1 where the caller asks it to, and the
    attempt loop serves n by n calls on any other."""
    found = _BY_NAME.get(name)
    return found is not None and found.answers_choices


def runs_built_in_tools(name: str) -> bool:
    """Whether wire `name` runs the provider's built-in tools (a wire this build does not know: no)."""
    found = _BY_NAME.get(name)
    return found is not None and found.built_in_tools


def embedding_wire(name: str) -> str | None:
    """The wire a provider listed under catalog wire `name` embeds over (None: it cannot embed)."""
    found = _BY_NAME.get(name)
    return found.embeds_over if found is not None else None


def rerank_wire(name: str) -> str | None:
    """The wire a provider listed under catalog wire `name` reranks over (None: it cannot rerank)."""
    found = _BY_NAME.get(name)
    return found.reranks_over if found is not None else None


def reply_timeout(name: str) -> bool:
    """Whether networkTimeout bounds only the wait for wire `name`'s reply to begin (see WireFacts)."""
    found = _BY_NAME.get(name)
    return found is not None and found.reply_timeout


def module_of(name: str) -> str:
    """The module path of wire `name` (KeyError for one this build does not know)."""
    return _BY_NAME[name].module
