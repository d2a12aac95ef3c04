"""The Responses route's stored state (`store: true`, `previous_response_id`, `item_reference`, and
GET/DELETE /v1/responses/{id}), as the flow's layer offers it to that dialect.

Every other dialect reaches Momor's stores only through the flow (this package); the Responses
route is the one with state of its own, and this module is its way in, so no dialect module imports
the store (tests/unit/test_layout.py checks it). The store module (store/responses.py) keeps the
items, their owner scoping and their bounded waits; here is what a failure means to a caller.
"""

from __future__ import annotations

from ..errors import MomorError
from ..logs import logger
from ..store import responses as _store
from ..store.dynamo import DynamoError

Stored = _store.Stored


async def read(caller_id: str, response_id: str, *, conversation: bool = True) -> Stored | None:
    """The caller's stored response, None when it has none by that id (another caller's included).
    A store that cannot answer is a 503 the caller may retry, never an answer without the history."""
    try:
        return await _store.get(caller_id, response_id, conversation=conversation)
    except DynamoError:
        logger.exception("stored responses not read")
        raise MomorError("Stored responses are unavailable; retry shortly.", status=503) from None


async def keep(caller_id: str, response_id: str, stored: Stored, request_id: str) -> bool:
    """Store the answer; False when the store did not take it (the answer is made and paid for: it
    still goes, saying `store: false`)."""
    try:
        await _store.put(caller_id, response_id, stored)
    except Exception:
        logger.exception("response not stored", extra={"request_id": request_id})
        return False
    return True


async def forget(caller_id: str, response_id: str) -> bool:
    """DELETE /v1/responses/{id}: whether the caller had it."""
    return await _store.delete(caller_id, response_id)
