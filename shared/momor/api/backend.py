"""The process's data: catalog, callers, provider keys, records. One instance per process.

Every route reaches AWS (or the local emulators) only through here, so the flow stays testable and
nothing is fetched per request that a cache can hold: the catalog is refreshed by ETag on a TTL,
the keys secret is cached with a max age, callers are cached briefly after a lookup.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from starlette.requests import Request

from ..catalog import Catalog
from ..config import Config, get_config
from ..routing import key_endpoint, key_spread
from ..routing.circuits import process_breakers
from ..routing.keys import KeyResolver, ResolvedKey
from ..routing.plan import Candidate
from ..store import budgets, dynamo, keys, ratelimit, records
from ..store.catalog_source import get_catalog_async
from ..store.last_good import StoreUnavailable
from . import auth

Caller = auth.Caller
READ_RECORD_TIMEOUT_S = 5.0
"""GET /generations/{id}'s whole read, retries included: past it, a 503 naming DynamoDB."""
API_BUCKET = ":api"
"""The caller's bucket for the routes that are not routed calls (api/route_limits.py)."""


@dataclass(slots=True)
class Backend:
    config: Config = field(default_factory=get_config)
    """Read and validated when the app is built: a bad MOMOR_* value stops the start, naming it."""

    async def catalog(self) -> Catalog:
        return await get_catalog_async()

    async def authenticate(self, request: Request) -> Caller:
        """The caller (api/auth.py, the one place credentials are read); raises auth.Unauthorized (401)."""
        return await auth.authenticate(request)

    async def admit(self, caller: Caller, weight: int = 1) -> ratelimit.RateState:
        """Count the call against the caller's rate limit (atomic in DynamoDB); a key's own
        `rateLimit` is read from its item, a person has MOMOR_RATE_LIMIT. `weight`: requests it
        counts as (a call's further answers, api/flow.py)."""
        return await ratelimit.admit(caller.id, key_hash=caller.key_hash, weight=weight)

    async def admit_api(self, caller: Caller) -> ratelimit.RateState:
        """Count a request to a route that is not a routed call (usage, records, stored responses, the
        key API: api/route_limits.py) in the caller's bucket for those, `<caller id>:api`, under the
        same limit as its calls."""
        return await ratelimit.admit(caller.id + API_BUCKET, key_hash=caller.key_hash)

    async def admit_budget(self, caller: Caller, estimate: Decimal, call_id: str | None = None
                           ) -> budgets.BudgetState | None:
        """Hold the call's estimated cost against the key's spend limits, if it has any (budgets.py),
        once for the call `call_id` however often the store is asked."""
        return await budgets.admit(caller, estimate, call_id) if budgets.has_budget(caller) else None

    async def settle_spend(self, spend: budgets.Spend, cost: Decimal) -> None:
        """The call has ended: release its hold, add what it cost (budgets.py)."""
        await budgets.settle(spend, cost)

    async def key_resolver(self, call_keys: dict[str, Any], *, zdr: bool, preview: bool = False) -> KeyResolver:
        # The saved keys are read once per call (off the event loop when stale) and the resolver
        # keeps them: failover may come long after, when the cache has expired, and refetching
        # then would be a blocking Secrets Manager call on the event loop, stalling every call.
        # `preview` (an explanation): a provider's several saved keys are looked at, none taken.
        return _resolver(call_keys, zdr, await keys.saved_keys_async(), preview)

    async def write_record(self, record: records.CallRecord, secrets: Iterable[str]) -> bool:
        """True: in the table; False: kept to be written later or spilled (store/deferred.py)."""
        return await records.put_record_async(record, secrets=secrets)

    async def read_record(self, record_id: str, caller_id: str) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(records.get_record_async(record_id, caller_id), READ_RECORD_TIMEOUT_S)
        except (dynamo.DynamoError, OSError, TimeoutError):  # the table is down or slow: a 503 naming it, never a 500
            raise StoreUnavailable("DynamoDB", "generation") from None


def _resolver(call_keys: dict[str, Any], zdr: bool,
              saved_keys: Mapping[str, keys.ProviderKey | keys.KeyPool], preview: bool = False) -> KeyResolver:
    """Per-call keys override saved ones; under zdr only a covered saved key serves (seed 000:
    saved keys marked zdr, or Momor's keys its own agreements cover; never a key sent with the call).
    A provider with several saved keys has one chosen per attempt (routing/key_spread.py)."""

    def resolve(candidate: Candidate) -> ResolvedKey | str:
        name = candidate.provider.name
        saved = keys.key_in(saved_keys, name)
        if zdr:
            if isinstance(saved, keys.KeyPool):
                return _spread(saved, candidate, preview, lambda key: key.zdr or candidate.provider.zdr)
            if saved is not None and (saved.zdr or candidate.provider.zdr):
                return ResolvedKey(saved.key, "saved", dict(saved.extra))
            return "zero data retention: no key for this provider is covered"
        per_call = keys.call_key(call_keys, name)
        if per_call is not None:
            return ResolvedKey(per_call.key, "call", dict(per_call.extra))
        if isinstance(saved, keys.KeyPool):
            return _spread(saved, candidate, preview)
        if saved is not None:
            return ResolvedKey(saved.key, "saved", dict(saved.extra))
        return "no key for this provider"

    return resolve


def _spread(pool: keys.KeyPool, candidate: Candidate, preview: bool, eligible: Any = None) -> ResolvedKey | str:
    chosen = key_spread.choose(pool, candidate.circuit, process_breakers(), eligible, take=not preview)
    if isinstance(chosen, str):
        return chosen
    key, slot = chosen
    if key.place is None:
        return ResolvedKey(key.key, "saved", dict(key.extra), label=key.label, slot=slot)
    # The key names where it goes (store/key_places.py): that offering's deployment, its own endpoint.
    extra = dict(key.extra)
    deployment = key.place.deployments.get(candidate.offering.id)
    if deployment is not None:
        extra["deployment"] = deployment
    provider = key_endpoint.provider_for(candidate.provider, key.label, key.place)
    if isinstance(provider, str):
        return provider
    return ResolvedKey(key.key, "saved", extra, label=key.label, slot=slot,
                       provider=provider if provider is not candidate.provider else None)
