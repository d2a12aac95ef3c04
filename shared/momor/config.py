"""The deployment's configuration: every MOMOR_* variable, validated in one place, read once.

    storage     MOMOR_CATALOG_FILE (development) or MOMOR_CATALOG_BUCKET + MOMOR_CATALOG_KEY (S3),
                MOMOR_CATALOG_TTL (60 s), MOMOR_KEYS_SECRET, MOMOR_KEYS_TTL (300 s),
                MOMOR_RECORDS_TABLE, MOMOR_RECORD_TTL_DAYS (90), MOMOR_API_KEYS_TABLE,
                MOMOR_API_KEY_CACHE_S (60: how long a disabled key may still work in a warm process),
                MOMOR_MEMORY_TABLE (the router's conversation memory), MOMOR_MEMORY_TTL_DAYS (30),
                MOMOR_RESPONSES_TABLE (stored responses), MOMOR_RESPONSES_TTL_DAYS (30)
    store outages   MOMOR_STORE_WAIT_S (0.8: the most one bookkeeping step waits on its store),
                MOMOR_RATE_LIMIT_ON_STORE_FAILURE (open), MOMOR_BUDGET_STORE_FAILURE (open),
                MOMOR_STORE_RETRY_S (30: how long a failed write is retried in process before it is
                spilled), MOMOR_SPILL_QUEUE_URL (the SQS queue failed writes are spilled to)
                (store/bounded.py, store/deferred.py, store/spill.py)
    cache       MOMOR_CACHE_TABLE (the response cache, store/cache.py), MOMOR_CACHE_TTL_S (3600: how long an
                answer is kept when neither the call, its key nor its organization says), MOMOR_CACHE_MAX_TTL_S
                (604800: the most any of them may ask), MOMOR_CACHE_WAIT_MS (150: the most a look-up or
                write may take before the call goes on without the cache), MOMOR_CACHE_BUCKET (the S3
                bucket of answers too large for an item; unset, those are not kept),
                MOMOR_CACHE_OBJECT_WAIT_MS (500: the most reading or writing one in S3 may take)
    sessions    MOMOR_COGNITO_USER_POOL_ID, MOMOR_COGNITO_REGION, MOMOR_COGNITO_CLIENT_ID,
                MOMOR_COGNITO_JWKS_URL (development: moto_server's), MOMOR_COGNITO_OPERATOR_GROUP;
                the console's sign-in: MOMOR_COGNITO_DOMAIN (the hosted page, deployed) or
                MOMOR_COGNITO_ENDPOINT (development: moto_server's, for InitiateAuth)
    failures    MOMOR_RETRIES (2), MOMOR_RETRY_BASE_MS (250), MOMOR_RETRY_MAX_MS (4000),
                MOMOR_MAX_RETRY_AFTER_S (20), MOMOR_CALL_BUDGET_S (300), MOMOR_CONNECT_TIMEOUT_S (10),
                MOMOR_RESPONSE_TIMEOUT_S (30: the response headers),
                MOMOR_FIRST_TOKEN_TIMEOUT_S (120), MOMOR_IDLE_TIMEOUT_S (60),
                MOMOR_BREAKER_FAILURES (5), MOMOR_BREAKER_COOLDOWN_S (30),
                MOMOR_HEALTH_CACHE_S (1: how stale the shared provider health may be; 0: per process),
                MOMOR_HEDGE_AFTER_S (10), MOMOR_HEDGE_MARGIN (2) (routing/hedge.py)
    limits      MOMOR_RATE_LIMIT (600 requests a window; 0: none), MOMOR_RATE_WINDOW_S (60),
                MOMOR_KEYS_PER_PERSON (50: active keys one person may make over the key API),
                MOMOR_MAX_BODY_BYTES (30 MiB), MOMOR_MAX_FILE_BYTES (10 MiB),
                MOMOR_MAX_FILES_BYTES (20 MiB), MOMOR_MAX_SCHEMA_BYTES (256 KiB): seed 000's
                defaults, which a deployment may lower but not raise; MOMOR_EMBED_MAX_INPUTS (2048:
                inputs one embedding call may have), MOMOR_EMBED_CONCURRENCY (4: requests one call's
                parts have under way at once), MOMOR_RERANK_MAX_DOCUMENTS (1000); MOMOR_MAX_CHOICES (8:
                the most `n` a chat call may ask, 128 at most), MOMOR_MAX_CONVERTED_FILES (10: files one
                call's fileProcessing may convert), MOMOR_MAX_JSON_VALUES (300,000: values a JSON body
                may hold, counted before it is parsed), MOMOR_GUARDRAIL_WINDOW (512: characters a
                stream's output guardrails hold back). On AWS Lambda
                (AWS_LAMBDA_FUNCTION_NAME set) MOMOR_MAX_BODY_BYTES is 5.87 MB at most (and by
                default), what an invocation can carry (LAMBDA_MAX_BODY_BYTES), so an inline file
                is 4.4 MB at most (its base64 is 4/3 of it); a file by URL keeps MOMOR_MAX_FILE_BYTES
    fetching    MOMOR_FETCH_ALLOW (none): hosts and IP networks a caller's file URL may reach although
                they are not public (egress.py; README "What Momor fetches")
    store reads MOMOR_STORE_READ_WAIT_S (1: how long a call waits on a key, organization, catalog or
                saved-keys read when a last good value can stand in), MOMOR_STORE_MAX_STALE_S (3600:
                how old a last good value may be and still be served; store/last_good.py)
    process     MOMOR_METRICS (0; 1: EMF metrics off Lambda too), MOMOR_ASGI_APP (the streaming
                bootstrap's module:attr)
    command line MOMOR_URL, MOMOR_API_KEY: where `momor keys` and `momor audit` call, with which key
                (cli/http.py; never set on a deployment)
    telemetry   MOMOR_OTEL_HEADERS_SECRET (none), MOMOR_OTEL_FLUSH_TIMEOUT_S (2) (api/telemetry.py; on
                only when OpenTelemetry's own OTEL_EXPORTER_OTLP_ENDPOINT, or a per-signal one, is set)

A bad value is a ConfigError naming its variable, raised when the configuration is first read:
the apps read it when they are built (app.py), so a deployment with a typo fails to start
instead of failing calls. Endpoints are not configuration: boto3 itself honours AWS_ENDPOINT_URL
and AWS_ENDPOINT_URL_<SERVICE>, which is how the local emulators are reached.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .egress import AllowList
from .errors import ConfigError

MIB = 1024 * 1024

LAMBDA_MAX_BODY_BYTES = 5_870_000
"""MOMOR_MAX_BODY_BYTES's default and ceiling on AWS Lambda. Lambda refuses an invocation whose event
passes 6 MB, and API Gateway's event carries the body next to the request's headers (twice: headers
and multiValueHeaders), query string and request context; a body past this would not reach Momor,
and the caller would get API Gateway's error instead of Momor's 413 (README, "Streaming, timeouts
and logs on Lambda"). It counts 6 MB in decimal and keeps 130 kB for the envelope. JSON bodies
reach Lambda as text (the API declares no binary media types): one base64-encoded by API Gateway
would take 4/3 of its size, and this limit would then have to be lowered to 4.4 MB."""


def _knob(env: str, default: Any = None, *, kind: type = str, minimum: float | None = None,
          maximum: float | None = None, scale: float = 1.0, positive: bool = False, repr_: bool = True) -> Any:
    """A field read from `env`: its type, bounds, and the factor from the variable's unit (`repr_`
    False: a credential, left out of the configuration's repr)."""
    meta = {"env": env, "kind": kind, "minimum": minimum, "maximum": maximum, "scale": scale, "positive": positive}
    return field(default=default, metadata=meta, repr=repr_)


def _flag(text: str) -> bool:
    """A switch: 1 on, 0 off; anything else is a typo, refused at start rather than read as off."""
    if text not in ("0", "1"):
        raise ValueError(text)
    return text == "1"


def _checked_allow_list(text: str) -> str:
    """MOMOR_FETCH_ALLOW as written, once egress.AllowList has read it (so a typo fails at start)."""
    AllowList.parse(text)
    return text


def _checked_origin(text: str) -> str:
    """An origin (`https://host[:port]`, no path): it goes into the console's Content-Security-Policy
    and its sign-in requests, so a stray space, quote or path is refused at start."""
    from urllib.parse import urlsplit

    parts = urlsplit(text.rstrip("/"))
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query \
            or parts.fragment or parts.username or any(c in text for c in " ;,'\""):
        raise ConfigError(f"MOMOR_COGNITO_ENDPOINT and MOMOR_COGNITO_DOMAIN are origins such as "
                          f"https://host.example (no path), not {text!r}")
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True, slots=True)
class Config:
    # storage
    catalog_file: str | None = _knob("MOMOR_CATALOG_FILE")
    """A catalog file on local disk (development and tests); the deployment reads S3 instead."""
    catalog_bucket: str | None = _knob("MOMOR_CATALOG_BUCKET")
    """The S3 bucket holding the catalog (store/catalog_source.py)."""
    catalog_key: str | None = _knob("MOMOR_CATALOG_KEY")
    """The catalog's object key in MOMOR_CATALOG_BUCKET."""
    catalog_ttl: float = _knob("MOMOR_CATALOG_TTL", 60.0, kind=float, minimum=0)
    """Seconds between checks of the S3 catalog for a new version (by ETag): an upload is live within it, no
    deployment needed."""
    keys_secret: str | None = _knob("MOMOR_KEYS_SECRET")
    """The Secrets Manager secret holding the deployment's saved provider keys."""
    keys_ttl: int = _knob("MOMOR_KEYS_TTL", 300, kind=int, minimum=0)
    """Seconds the saved provider keys are trusted before Secrets Manager is read again."""
    records_table: str | None = _knob("MOMOR_RECORDS_TABLE")
    """The DynamoDB table of call records (`GET /generations/{id}`, `/usage`); unset: records go to the log
    only."""
    record_ttl_days: int = _knob("MOMOR_RECORD_TTL_DAYS", 90, kind=int, minimum=0)
    """Days a call record is kept (DynamoDB's TTL removes it after)."""
    api_keys_table: str | None = _knob("MOMOR_API_KEYS_TABLE")
    """The DynamoDB table of Momor API keys, organizations, people, budgets, rate-limit windows and shared
    provider health; unset: no keys are checked (development only)."""
    api_key_cache: float = _knob("MOMOR_API_KEY_CACHE_S", 60.0, kind=float, minimum=0)
    """How long a verified API key (and its rateLimit and budgets) is trusted without asking the table:
    the bound on how long a disabled or deleted key keeps working in a warm process. 0: every call asks."""
    # store reads in an outage (store/last_good.py)
    store_read_wait: float = _knob("MOMOR_STORE_READ_WAIT_S", 1.0, kind=float, minimum=0)
    """How long a call waits on a store read (API key, organization, catalog, saved keys) when a last good
    value can stand in; a store known to be failing is not waited on at all."""
    store_max_stale: float = _knob("MOMOR_STORE_MAX_STALE_S", 3600.0, kind=float, minimum=0)
    """How long after the store last confirmed it a last good value may still be served."""
    # the router's memory and the Responses route's stored answers
    memory_table: str | None = _knob("MOMOR_MEMORY_TABLE")
    """The DynamoDB table of the router's conversation memory (`/router/v1`)."""
    memory_ttl_days: int = _knob("MOMOR_MEMORY_TTL_DAYS", 30, kind=int, minimum=0)
    """Days a remembered conversation turn is kept."""
    responses_table: str | None = _knob("MOMOR_RESPONSES_TABLE")  # stored responses (store/responses.py)
    responses_ttl_days: int = _knob("MOMOR_RESPONSES_TTL_DAYS", 30, kind=int, minimum=0)
    """Days a stored Responses-route answer is kept (`previous_response_id` reads it)."""
    cache_table: str | None = _knob("MOMOR_CACHE_TABLE")  # the response cache (store/cache.py, api/cached.py)
    """The DynamoDB table of the response cache; unset, the cache is off whatever a call asks."""
    cache_ttl: int = _knob("MOMOR_CACHE_TTL_S", 3600, kind=int, minimum=1)
    """Seconds an answer is kept when neither the call (X-Momor-Cache-TTL), its key nor its organization says."""
    cache_max_ttl: int = _knob("MOMOR_CACHE_MAX_TTL_S", 604_800, kind=int, minimum=1)
    """The longest TTL a call, key or organization may ask (a longer X-Momor-Cache-TTL is a 400)."""
    cache_wait: float = _knob("MOMOR_CACHE_WAIT_MS", 0.15, kind=float, positive=True, scale=0.001)
    """The most a cache look-up (or write) may take; past it the call goes to its provider, recorded as
    the cache being unavailable."""
    cache_bucket: str | None = _knob("MOMOR_CACHE_BUCKET")  # large answers (store/cache_objects.py)
    """The S3 bucket of the answers too large for a cache item (over 380 KB compressed): the item points
    at the object. Unset, such answers are not kept."""
    cache_object_wait: float = _knob("MOMOR_CACHE_OBJECT_WAIT_MS", 0.5, kind=float, positive=True, scale=0.001)
    """The most reading a large answer back from S3 (after its item's look-up), or writing one, may take; past
    it, or with S3 down, the call goes to its provider, recorded as the cache being unavailable."""
    usage_max_records: int = _knob("MOMOR_USAGE_MAX_RECORDS", 20_000, kind=int, minimum=1)  # store/usage.py
    # failures (routing/policy.py)
    retries: int = _knob("MOMOR_RETRIES", 2, kind=int, minimum=0, maximum=10)
    """Retries of one offering on a retryable failure (429, 5xx, a cut connection) before the call moves to
    the next candidate."""
    retry_base: float = _knob("MOMOR_RETRY_BASE_MS", 0.25, kind=float, minimum=0, scale=0.001)
    """The first retry's backoff in milliseconds (doubling, with jitter, up to MOMOR_RETRY_MAX_MS)."""
    retry_max: float = _knob("MOMOR_RETRY_MAX_MS", 4.0, kind=float, minimum=0, scale=0.001)
    """The longest backoff between two retries, in milliseconds."""
    max_retry_after: float = _knob("MOMOR_MAX_RETRY_AFTER_S", 20.0, kind=float, minimum=0)
    """The longest provider `Retry-After` Momor waits out; a longer one moves the call to the next candidate
    instead."""
    call_budget: float = _knob("MOMOR_CALL_BUDGET_S", 300.0, kind=float, positive=True)
    """A call's whole time, every attempt included."""
    connect_timeout: float = _knob("MOMOR_CONNECT_TIMEOUT_S", 10.0, kind=float, positive=True)
    """Connecting to a provider."""
    response_timeout: float = _knob("MOMOR_RESPONSE_TIMEOUT_S", 30.0, kind=float, positive=True)
    """Waiting for a provider's response headers (a streamed call's; a buffered answer's come with the whole
    answer, under the first-token timeout)."""
    first_token_timeout: float = _knob("MOMOR_FIRST_TOKEN_TIMEOUT_S", 120.0, kind=float, positive=True)
    """Waiting for the first visible output (text, reasoning or a tool call); for a buffered call, the whole
    answer."""
    idle_timeout: float = _knob("MOMOR_IDLE_TIMEOUT_S", 60.0, kind=float, positive=True)
    """The longest silence between two reads of a stream or a body: a stalled answer is an error, never a
    finish."""
    breaker_failures: int = _knob("MOMOR_BREAKER_FAILURES", 5, kind=int, minimum=1)
    """Failures in a row that open an offering's circuit (it is then tried only after every other candidate)."""
    breaker_cooldown: float = _knob("MOMOR_BREAKER_COOLDOWN_S", 30.0, kind=float, minimum=0)
    """Seconds an open circuit waits before one half-open probe call."""
    health_cache: float = _knob("MOMOR_HEALTH_CACHE_S", 1.0, kind=float, minimum=0)
    """How long a process trusts what it read of the shared provider health (routing/shared_health.py); 0
    keeps health per process."""
    hedge_after: float = _knob("MOMOR_HEDGE_AFTER_S", 10.0, kind=float, positive=True)
    """How late a first token may be before the next candidate starts beside it, until an offering
    has enough first-token samples for its own p95 (routing/hedge.py)."""
    hedge_margin: float = _knob("MOMOR_HEDGE_MARGIN", 2.0, kind=float, minimum=1)
    """An offering's observed first-token p95 times this is when its first token is late."""
    # limits
    rate_limit: int = _knob("MOMOR_RATE_LIMIT", 600, kind=int, minimum=0)
    """Requests a Momor API key or signed-in person may make per window, unless an admin set the key's own
    limit; 0: no limit."""
    rate_window: int = _knob("MOMOR_RATE_WINDOW_S", 60, kind=int, minimum=1)
    """The fixed rate-limit window, in seconds."""
    keys_per_person: int = _knob("MOMOR_KEYS_PER_PERSON", 50, kind=int, minimum=1)
    """How many keys not revoked one person (or admin key) may have made over the key API
    (store/key_admin.py): a further POST /keys is refused with 403 until one is revoked."""
    max_body_bytes: int = _knob("MOMOR_MAX_BODY_BYTES", 30 * MIB, kind=int, minimum=1, maximum=30 * MIB)
    """The largest request body (at most 30 MiB: API Gateway's own limit is near it)."""
    max_file_bytes: int = _knob("MOMOR_MAX_FILE_BYTES", 10 * MIB, kind=int, minimum=1, maximum=10 * MIB)
    """The largest single file a call carries or fetches."""
    max_files_bytes: int = _knob("MOMOR_MAX_FILES_BYTES", 20 * MIB, kind=int, minimum=1, maximum=20 * MIB)
    """The largest total of a call's files."""
    max_schema_bytes: int = _knob("MOMOR_MAX_SCHEMA_BYTES", 256 * 1024, kind=int, minimum=1, maximum=256 * 1024)
    """The largest `responseSchema` (or tool parameters schema) a call may send."""
    embed_max_inputs: int = _knob("MOMOR_EMBED_MAX_INPUTS", 2048, kind=int, minimum=1, maximum=100_000)
    """Inputs one embedding call may have (more: a 400 before any provider is asked). Past what an
    offering takes in one request, the call is sent in parts (routing/embed.py)."""
    embed_concurrency: int = _knob("MOMOR_EMBED_CONCURRENCY", 4, kind=int, minimum=1, maximum=64)
    """Requests of one embedding call's parts under way at once."""
    rerank_max_documents: int = _knob("MOMOR_RERANK_MAX_DOCUMENTS", 1000, kind=int, minimum=1, maximum=100_000)
    """Documents one rerank call may have (more: a 400 before any provider is asked)."""
    guardrail_window: int = _knob("MOMOR_GUARDRAIL_WINDOW", 512, kind=int, minimum=16, maximum=65_536)
    """Characters of a streamed part an output guardrail holds back at most (guardrails/answer.py):
    any match of up to half of it is seen whole before any of it is sent."""
    guardrail_moderation_provider: str = _knob("MOMOR_GUARDRAIL_MODERATION_PROVIDER", "")
    """The catalog provider the `moderation` guardrail check asks (its OpenAI-wire base URL and saved
    key: `POST {baseUrl}/moderations`); empty, the default: a policy naming the check is refused (400)."""
    guardrail_moderation_model: str = _knob("MOMOR_GUARDRAIL_MODERATION_MODEL", "omni-moderation-latest")
    """The moderation model the `moderation` guardrail check names (OpenAI's `model`)."""
    max_choices: int = _knob("MOMOR_MAX_CHOICES", 8, kind=int, minimum=1, maximum=128)
    """The most answers (`n`) one Chat Completions call may ask (more: a 400 naming `n`). A wire that
    answers one choice serves `n` by `n` provider calls (routing/choices.py), each counted against
    the caller's rate limit and held against its budget; OpenAI's own maximum is 128."""
    max_converted_files: int = _knob("MOMOR_MAX_CONVERTED_FILES", 10, kind=int, minimum=1, maximum=1000)
    """Files one call's fileProcessing may convert (more: a 400 before any provider is asked): each
    conversion may be a model's call of its own (routing/conversion.py)."""
    max_json_values: int = _knob("MOMOR_MAX_JSON_VALUES", 300_000, kind=int, minimum=1000, maximum=10_000_000)
    """Values (objects, arrays, strings, numbers...) a JSON body may hold, counted before it is parsed
    (door_http.py): a body of small values takes far more memory parsed than written (5.8 MB of `{}`
    was 280 MB), so more is a 413. 300,000 keeps OpenAI's largest embedding request (300,000 token ids)."""
    # fetching (egress.py)
    fetch_allow: str | None = _knob("MOMOR_FETCH_ALLOW", kind=_checked_allow_list)
    """Comma-separated host names and IP networks that file URLs (and a Vertex token endpoint) may
    reach although they are loopback, private or link-local; parsed by egress.AllowList."""

    budget_store_failure: str = _knob("MOMOR_BUDGET_STORE_FAILURE", "open")
    """When the spend-limit store (DynamoDB) fails: `open` admits a budgeted call uncounted (settled
    once the store answers again), `closed` refuses it with 503 (store/budgets.py)."""
    # store outages (store/bounded.py, store/deferred.py, store/spill.py)
    store_wait: float = _knob("MOMOR_STORE_WAIT_S", 0.8, kind=float, positive=True, maximum=2.5)
    """The most one bookkeeping step on a call's path (a rate-limit lease, a budget hold, shared health,
    memory, a record written before the answer) waits on its store, retries included; past it the
    step's failure setting decides at once. The steps of one call wait 2.5 s in all at most."""
    rate_limit_store_failure: str = _knob("MOMOR_RATE_LIMIT_ON_STORE_FAILURE", "open")
    """When the rate-limit store fails: `open` admits the request uncounted, `closed` refuses it with 503."""
    store_retry: float = _knob("MOMOR_STORE_RETRY_S", 30.0, kind=float, minimum=0)
    """How long a write that failed (a record, a memory turn, a budget settlement) is retried in the
    background before it is spilled to MOMOR_SPILL_QUEUE_URL. On Lambda it is spilled at once: a frozen
    environment may never run again."""
    spill_queue_url: str | None = _knob("MOMOR_SPILL_QUEUE_URL")
    """The SQS queue (the template's SpillQueue) where writes the store did not take are kept until
    `momor records replay` writes them (store/spill.py)."""
    # the process (metrics.py, lambda_stream/runner.py)
    metrics: bool = _knob("MOMOR_METRICS", False, kind=_flag)
    """1: write EMF metrics off Lambda too, as on Lambda (where they are always on); metrics.py."""
    asgi_app: str | None = _knob("MOMOR_ASGI_APP")
    """The streaming bootstrap's app, module:attr (lambda_stream/runner.py; lambda_bootstrap.sh)."""
    # OpenTelemetry export (api/telemetry.py): off unless OpenTelemetry's own OTEL_EXPORTER_OTLP_ENDPOINT
    # (or a per-signal one) is set; the SDK's exporters read OTEL_* themselves. Momor's two knobs:
    otel_headers_secret: str | None = _knob("MOMOR_OTEL_HEADERS_SECRET")
    """A Secrets Manager secret whose string is the exporters' headers (`name=value,...`), read
    once at the first export, instead of OTEL_EXPORTER_OTLP_HEADERS in the environment."""
    otel_flush_timeout: float = _knob("MOMOR_OTEL_FLUSH_TIMEOUT_S", 2.0, kind=float, minimum=0.1, maximum=30)
    """On Lambda: the exporters' timeout, which bounds the flush after each invocation on the whole
    (the spans and the metrics are sent at once: api/telemetry.py flush)."""
    """The streaming bootstrap's app, module:attr (lambda_stream/runner.py; lambda_bootstrap.sh)."""
    # signed-in sessions (api/cognito.py): the user pool whose access tokens are accepted
    cognito_user_pool_id: str | None = _knob("MOMOR_COGNITO_USER_POOL_ID")
    """The Cognito user pool whose access tokens sign people in (the console, the key API); unset: no sign-in."""
    cognito_region: str | None = _knob("MOMOR_COGNITO_REGION")
    """The pool's region (default: the pool id's own prefix, `us-east-1_...`)."""
    cognito_client_id: str | None = _knob("MOMOR_COGNITO_CLIENT_ID")
    """The console's app client: an access token issued to any other client is refused."""
    cognito_jwks_url: str | None = _knob("MOMOR_COGNITO_JWKS_URL")
    """Development only: where the pool's keys are served (moto_server's /<pool id>/.well-known/jwks.json).
    Unset, the pool's own issuer URL at AWS. Never read from a token (that would let a caller pick the host)."""
    cognito_operator_group: str = _knob("MOMOR_COGNITO_OPERATOR_GROUP", "momor-operators")
    """The Cognito group whose members are the deployment's operators (they see every organization)."""

    # the `momor` command line (cli/http.py): where `momor keys` and `momor audit` call, and with which key.
    # Read by the CLI only; a deployment leaves them unset.
    cli_url: str | None = _knob("MOMOR_URL")
    """The `momor` CLI: the base URL of the Momor its key and audit commands call (`--url` overrides it)."""
    cli_api_key: str | None = _knob("MOMOR_API_KEY", repr_=False)
    """The `momor` CLI: the admin's or operator's API key those commands send (`--api-key` overrides it).
    Kept out of the configuration's repr, so no log line of it carries the key."""

    # the console's sign-in (api/console.py)
    cognito_endpoint: str | None = _knob("MOMOR_COGNITO_ENDPOINT", kind=_checked_origin)
    """The user-pool emulator's base URL (development, tests); unset on AWS, where it is Cognito's."""
    cognito_domain: str | None = _knob("MOMOR_COGNITO_DOMAIN", kind=_checked_origin)
    """The hosted sign-in page's origin (`https://<prefix>.auth.<region>.amazoncognito.com`): the
    console signs in there with the authorization-code flow and PKCE (api/console.py)."""

    @property
    def max_inline_file_bytes(self) -> int:
        """The largest file a body can carry inline: MOMOR_MAX_FILE_BYTES, and no more than the body
        limit allows once base64 makes it 4/3 of its size (4.4 MB on Lambda). A file by URL is
        fetched by Momor, outside the body: MOMOR_MAX_FILE_BYTES alone bounds it."""
        return min(self.max_file_bytes, _decoded_size(self.max_body_bytes))

    @property
    def max_inline_files_bytes(self) -> int:
        """All inline files together: MOMOR_MAX_FILES_BYTES, within what the body can carry."""
        return min(self.max_files_bytes, _decoded_size(self.max_body_bytes))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        env = os.environ if env is None else env
        on_lambda = bool(env.get("AWS_LAMBDA_FUNCTION_NAME"))
        values: dict[str, Any] = {}
        for f in fields(cls):
            meta = _lambda_bounds(f.metadata) if on_lambda else f.metadata
            text = (env.get(meta["env"]) or "").strip()
            if text:
                values[f.name] = _read(meta, text)
        if on_lambda:
            values.setdefault("max_body_bytes", LAMBDA_MAX_BODY_BYTES)
        config = cls(**values)
        config._check_catalog()
        if config.budget_store_failure not in ("open", "closed"):
            raise ConfigError(f"MOMOR_BUDGET_STORE_FAILURE must be open or closed, not {config.budget_store_failure!r}")
        if config.rate_limit_store_failure not in ("open", "closed"):
            raise ConfigError("MOMOR_RATE_LIMIT_ON_STORE_FAILURE must be open or closed, not "
                              f"{config.rate_limit_store_failure!r}")
        return config

    def need(self, name: str) -> str:
        """The value of a setting a module cannot work without, or a ConfigError naming its variable."""
        value = getattr(self, name)
        if value is None:
            raise ConfigError(f"{env_var(name)} is not set")
        return value

    def _check_catalog(self) -> None:
        if self.catalog_file and (self.catalog_bucket or self.catalog_key):
            raise ConfigError("Set MOMOR_CATALOG_FILE or MOMOR_CATALOG_BUCKET/KEY, not both")
        if bool(self.catalog_bucket) != bool(self.catalog_key):
            raise ConfigError("MOMOR_CATALOG_BUCKET and MOMOR_CATALOG_KEY go together")


def _lambda_bounds(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """A field's bounds on AWS Lambda: the body limit may not pass what an invocation carries."""
    if meta["env"] == "MOMOR_MAX_BODY_BYTES":
        return {**meta, "maximum": LAMBDA_MAX_BODY_BYTES}
    return meta


def _decoded_size(encoded: int) -> int:
    """The most bytes `encoded` bytes of base64 hold, rounded down to 100 kB past 1 MB (a limit
    stated as "4.4 MB", not "4402500 bytes")."""
    size = encoded * 3 // 4
    return size - size % 100_000 if size >= 1_000_000 else size


def _read(meta: Mapping[str, Any], text: str) -> Any:
    name, kind = meta["env"], meta["kind"]
    if kind is str:
        return text
    try:
        value = kind(text)
    except ValueError:
        noun = "an integer" if kind is int else "1 or 0" if kind is _flag else "a number"
        raise ConfigError(f"{name} must be {noun}, not {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):  # NaN, infinity
        raise ConfigError(f"{name} must be a finite number, not {text!r}")
    if meta["positive"] and value <= 0:
        raise ConfigError(f"{name} must be greater than 0, not {text!r}")
    if meta["minimum"] is not None and value < meta["minimum"]:
        raise ConfigError(f"{name} must be at least {meta['minimum']:g}, not {text!r}")
    if meta["maximum"] is not None and value > meta["maximum"]:
        raise ConfigError(f"{name} may be at most {meta['maximum']:.15g} (a deployment may lower this limit, "
                          f"not raise it), not {text!r}")
    return value * meta["scale"] if meta["scale"] != 1.0 else value


def describe_bytes(size: int) -> str:
    """A byte limit as a person reads it: 30 MiB, 256 KiB, 5.87 MB (Lambda's limits are decimal), 1000 bytes."""
    for unit, scale in (("MiB", MIB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    if size >= 1_000_000 and size % 10_000 == 0:
        return f"{size / 1_000_000:g} MB"
    return f"{size} bytes"


def env_var(name: str) -> str:
    """The environment variable behind a Config field."""
    return next(f.metadata["env"] for f in fields(Config) if f.name == name)


@functools.cache
def get_config() -> Config:
    """The process's configuration, read on first use (after tests have had a chance to set the env)."""
    return Config.from_env()


def reset_config() -> None:
    """For tests: forget the cached configuration and what was derived from it."""
    get_config.cache_clear()
    for forget in _derived:
        forget()


_derived: list[Any] = []


def derived(fn: Any) -> Any:
    """Register a `functools.cache`d value built from the configuration, so `reset_config` forgets
    it too (apply it above `@functools.cache`)."""
    _derived.append(fn.cache_clear)
    return fn


@derived
@functools.cache
def fetch_allow_list() -> AllowList:
    """The deployment's MOMOR_FETCH_ALLOW, read once (a malformed entry is a ConfigError naming it).
    Here rather than in egress.py, so the address rules import nothing of the configuration."""
    return AllowList.parse(get_config().fetch_allow)


ENV_VARS: tuple[str, ...] = tuple(f.metadata["env"] for f in fields(Config))
