"""The multipart exchange: one non-streaming form post (audio transcription)."""

from __future__ import annotations

from typing import Any

import httpx2

from ..httpx_client import shared_client
from .base import Target
from .transport import DEFAULT_TIMEOUTS, Timeouts, provider_errors, request_headers, target_url


async def post_multipart(
    wire: Any, request: Any, target: Target, *, timeouts: Timeouts = DEFAULT_TIMEOUTS,
    client: httpx2.AsyncClient | None = None,
) -> bytes:
    """A non-streaming multipart exchange (audio transcription: openai_transcribe.MultipartRequest):
    the whole answer's body, or the wire's ProviderError."""
    client = client or shared_client()
    headers = request_headers(target, request.headers)  # the attempt's traceparent too, as every exchange
    timeout = httpx2.Timeout(connect=timeouts.connect, read=timeouts.first_token, write=timeouts.idle,
                             pool=timeouts.connect)
    with provider_errors(target, headers):
        response = await client.post(request.url or target_url(target, request.path), data=request.fields,
                                     files={"file": request.file}, headers=headers, timeout=timeout)
        if response.status_code >= 400:
            raise wire.map_error(response.status_code, response.content, dict(response.headers))
        return response.content
