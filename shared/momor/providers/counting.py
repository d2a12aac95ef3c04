"""Token counting: the offering's own count of a call's input tokens (a wire with `count_request`)."""

from __future__ import annotations

import httpx2

from ..call import Call
from ..httpx_client import shared_client
from .base import Target, Wire
from .transport import DEFAULT_TIMEOUTS, Timeouts, credential_headers, provider_errors, target_url


async def count_tokens(
    wire: Wire, call: Call, target: Target, *, timeouts: Timeouts = DEFAULT_TIMEOUTS,
    client: httpx2.AsyncClient | None = None,
) -> int:
    """The offering's own count of the call's input tokens (a wire with `count_request`), with the
    same error mapping as a generation."""
    client = client or shared_client()
    request = wire.count_request(call, target)  # type: ignore[attr-defined]
    headers = {**target.provider.headers, **request.headers}
    timeout = httpx2.Timeout(connect=timeouts.connect, read=timeouts.first_token, write=timeouts.idle,
                             pool=timeouts.connect)
    with provider_errors(target, headers):
        headers.update(await credential_headers(wire, target))
        response = await client.post(request.url or target_url(target, request.path), json=request.body,
                                     headers=headers, timeout=timeout)
        if response.status_code >= 400:
            raise wire.map_error(response.status_code, response.content, dict(response.headers))
        return wire.parse_count(response.content)  # type: ignore[attr-defined]
