"""The rate limit on every authenticated route that is not a routed call (issue 33): GET /usage,
/generations/{id}, /v1/responses/{id} (GET, DELETE, input_items), /models and /v1/models, GET /me and
the key API.

    headers = await route_limits.admit(backend, caller)   # raises RateLimited (429) past the limit
    response.headers.update(headers)                      # X-RateLimit-* on every answer

These count in a bucket of their own, `<caller id>:api` (backend.API_BUCKET; its window items are
`rate#<caller id>:api#<window>`), under the same limit as the caller's calls
(the key's own `rateLimit`, else MOMOR_RATE_LIMIT, per MOMOR_RATE_WINDOW_S): reading usage, records
and stored responses is bounded as calls are, and a console left open, or a client polling a record,
never eats into what the key may call. The limiter is store/ratelimit.py, asked as routed calls ask
it (atomic in DynamoDB, leases, fail open). A refusal is a 429 in the route's own error shape, with
Retry-After and the X-RateLimit-* headers a routed call's refusal carries.
"""

from __future__ import annotations

from ..errors import MomorError, RequestError
from ..store.ratelimit import RateState
from .auth import Caller
from .backend import Backend


class RateLimited(RequestError):
    status = 429

    def __init__(self, state: RateState) -> None:
        super().__init__(f"Rate limit exceeded: {state.limit} requests a window; retry in {state.retry_after} s.",
                         status=429)
        self.headers = state.headers()


async def admit(backend: Backend, caller: Caller) -> dict[str, str]:
    """Count one request of `caller` on these routes: the X-RateLimit-* headers for its answer, or
    RateLimited past the limit."""
    state = await backend.admit_api(caller)
    if not state.allowed:
        raise RateLimited(state)
    return state.headers()


def refusal_headers(exc: MomorError) -> dict[str, str]:
    """The X-RateLimit-* and Retry-After headers of a RateLimited refusal (none for another error)."""
    return exc.headers if isinstance(exc, RateLimited) else {}
