"""Who is calling: the one place that reads a request's credential and turns it into a Caller.

    caller = await auth.authenticate(request)   # raises Unauthorized (401) in every other case

A credential is an API key (`Authorization: Bearer momor-...` or `X-API-Key`, the Anthropic SDK's
header) or a signed-in session's Cognito access token (`Authorization: Bearer <JWT>`, seed 001: "a
signed-in Momor session works too"). Every dialect and route asks here; nothing else in Momor reads
`Authorization` or `X-API-Key` (tests/unit/test_auth_one_place.py holds that, provider wires aside,
which set their own outbound).

The Caller says who (an API key's id, or `p-<sub>` for a person), which organization (with its
defaults and budgets, store/organizations.py), and which role:
    member    calls, sees their own usage and keys (creates keys if the organization allows it)
    admin     manages the organization: its keys, its usage broken down by key and by person
    operator  the deployment's owner (the Cognito group MOMOR_COGNITO_OPERATOR_GROUP, or an API key
              made `--admin` by the script): sees every organization's usage
A credential is never logged, recorded or put in an error: the 401 says what failed, not what was sent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from starlette.requests import Request

from ..config import get_config
from ..door_http import headers_of
from ..errors import RequestError
from ..guardrails.policy import NONE, Policy, merged
from ..routing.selectors import Allowed, allowed
from ..store import apikeys, organizations
from ..store.budgets import ORG_SUBJECT, ScopedBudget, scoped_budgets
from ..store.organizations import Defaults, Organization
from ..store.token_limits import TokenSubject, subject_of
from . import cognito

PERSON_PREFIX = "p-"
"""A signed-in person's caller id is `p-<Cognito sub>`: never an API key's (16 hex digits)."""


class Unauthorized(RequestError):
    def __init__(self, detail: str = "A valid Momor API key or signed-in session is required.") -> None:
        super().__init__(detail, status=401)


@dataclass(frozen=True, slots=True)
class Caller:
    id: str
    """Stable and not secret: on records and in logs."""
    name: str
    kind: Literal["key", "session"]
    org: Organization
    role: str
    """member | admin | operator."""
    person: str | None = None
    """The person behind the call: the signed-in person, or a console-made key's owner."""
    email: str | None = None
    zdr: bool = False
    """The API key itself holds every call to zero data retention (the organization's hold is in defaults)."""
    budget_daily: Decimal | None = None
    budget_monthly: Decimal | None = None
    """The API key's own spend limits (budgets.py); the organization's are on `org`."""
    key_hash: str | None = field(default=None, repr=False)
    """The key item's partition key (where the rate limiter reads its rateLimit); None for a session."""
    allow: tuple[Allowed, ...] = ()
    """The key's and the organization's allow-lists (issue 38), as the planner's `allow` rule reads them."""
    max_cost_per_call: Decimal | None = None
    """The key's `maxCostPerCallUsd` (api/flow.py refuses a call estimated above it)."""
    scoped: tuple[ScopedBudget, ...] = ()
    """The key's and the organization's budgets by model and by provider (store/budgets.py ScopedBudget)."""
    tokens: tuple[TokenSubject, ...] = ()
    """The key's and the organization's token limits (store/token_limits.py); each must admit a call."""
    cache: bool | None = None
    """The API key's own response-cache default (None: its organization's; api/cached.py)."""
    cache_ttl: int | None = None
    key_guardrails: Policy = NONE
    """The API key's own guardrail checks (the organization's are on `org`)."""

    @property
    def guardrails(self) -> Policy:
        """The checks every call of this caller runs: the organization's, then the key's."""
        return merged(self.org.guardrails, self.key_guardrails)

    @property
    def defaults(self) -> Defaults:
        return self.org.defaults

    @property
    def admin(self) -> bool:
        """Manages its organization (an operator manages every one)."""
        return self.role in ("admin", "operator")


def credential(request: Request) -> str | None:
    """The credential as sent: `X-API-Key`, else `Authorization: Bearer`."""
    headers = headers_of(request)
    key = headers.get("x-api-key", "").strip()
    if key:
        return key
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


async def authenticate(request: Request) -> Caller:
    """The caller, or Unauthorized for a missing, unknown, disabled, forged, expired or foreign credential."""
    presented = credential(request)
    if presented is None:
        raise Unauthorized()
    if cognito.looks_like_jwt(presented):
        return await _session(presented)
    digest = apikeys.key_hash(presented)
    key = await apikeys.authenticate(presented, digest=digest)
    if key is None:
        raise Unauthorized("A valid Momor API key is required.")
    if key.expires is not None and time.time() >= key.expires.timestamp():
        raise Unauthorized(_expired(key))
    return await key_caller(key, digest)


def _expired(key: apikeys.Caller) -> str:
    at = key.expires.isoformat().replace("+00:00", "Z") if key.expires else ""
    if key.rotated:
        return (f"This API key was rotated: its old secret stopped working at {at}, when its grace period "
                "ended. Use the key's new secret.")
    return f"This API key expired at {at}. Ask for a new key, or for this one's expiresAt to be moved."


async def key_caller(key: apikeys.Caller, key_hash: str | None) -> Caller:
    org = await _organization(key.org)
    # The same key object (apikeys' cache) with the same organization object (organizations' cache)
    # is the same Caller: made once, not on every call (a frozen dataclass of 11 fields). The entry
    # holds both objects, so an id in it is never reused by another while it is there.
    kept = _callers.get(id(key))
    if kept is not None and kept[0] is key and kept[1] is org and kept[2] == key_hash:
        return kept[3]
    caller = Caller(id=key.id, name=key.name, kind="key", org=org, role=key.role, person=key.owner,
                    zdr=key.zdr, budget_daily=key.budget_daily, budget_monthly=key.budget_monthly, key_hash=key_hash,
                    allow=_allow(allowed("your API key", key.allow_models, key.allow_providers), org),
                    tokens=_tokens(subject_of(key.id, key.tokens_per_minute, key.tokens_per_day), org),
                    scoped=scoped_budgets(key.id, key.budgets_by_model, key.budgets_by_provider) + _scoped(org),
                    max_cost_per_call=key.max_cost_per_call,
                    cache=key.cache, cache_ttl=key.cache_ttl,
                    key_guardrails=key.guardrails)
    if len(_callers) >= _CALLERS_KEPT:
        _callers.clear()
    _callers[id(key)] = (key, org, key_hash, caller)
    return caller


_callers: dict[int, tuple[apikeys.Caller, Organization, str | None, Caller]] = {}
_CALLERS_KEPT = 4096


async def _session(token: str) -> Caller:
    try:
        session = await cognito.verify(token)
    except cognito.InvalidToken as exc:
        raise Unauthorized(f"The signed-in session is not valid: {exc}.") from None
    member = await organizations.membership(session.sub)
    org = await _organization(member.org)
    operator = get_config().cognito_operator_group in session.groups
    return Caller(id=PERSON_PREFIX + session.sub, name=member.email or session.username, kind="session", org=org,
                  role="operator" if operator else member.role, person=session.sub,
                  email=member.email or (session.username if "@" in session.username else None),
                  allow=_allow(None, org), tokens=_tokens(None, org), scoped=_scoped(org))


def _scoped(org: Organization) -> tuple[ScopedBudget, ...]:
    """The organization's budgets by model and by provider: every call of it is held against them too."""
    return scoped_budgets(ORG_SUBJECT + org.id, org.budgets_by_model, org.budgets_by_provider, "your organization's")


def _tokens(key: TokenSubject | None, org: Organization) -> tuple[TokenSubject, ...]:
    mine = subject_of(ORG_SUBJECT + org.id, org.tokens_per_minute, org.tokens_per_day, "your organization's")
    return tuple(t for t in (key, mine) if t is not None)


def _allow(key: Allowed | None, org: Organization) -> tuple[Allowed, ...]:
    """The allow-lists that bind a caller: its key's, and its organization's (each must pass)."""
    mine = allowed("your organization", org.allow_models, org.allow_providers)
    return tuple(a for a in (key, mine) if a is not None)


async def _organization(org_id: str) -> Organization:
    org = await organizations.get(org_id)
    if org is None:  # the key or person names an organization that was removed
        raise Unauthorized("This credential's organization no longer exists.")
    return org
