"""Stored responses of the Responses dialect (issue 24): one DynamoDB item per response, per API key.

MOMOR_RESPONSES_TABLE, partition key `responseKey`:

    responseKey   "<caller id>#<response id>": namespaced by the API key's caller id, so another
                  key's GET, DELETE or previous_response_id names an item that does not exist (404)
    response      JSON text of the response object, as the caller was answered
    inputItems    JSON text of the response's input items, each with its id (what input_items lists)
    conversation  zlib'd JSON of the whole canonical conversation up to and including this answer
                  (messages.dump_messages), provider state included: what previous_response_id
                  continues, on any wire. Whole, so the next turn is one GetItem whatever its length;
                  compressed, since each turn repeats the conversation so far (DynamoDB's item limit
                  is 400 KB: a conversation past it is not stored, and the answer says store false)
    expiresAt     epoch seconds; the table's TTL attribute (MOMOR_RESPONSES_TTL_DAYS after the answer)

Calls go through `dynamo.call` (the hot path's signed POST), like router memory, and a put or get
waits on the store at most MOMOR_STORE_WAIT_S (store/bounded.py): a response the store does not take
in time is answered `store: false`, and a read that does not come back is a 503.
"""

from __future__ import annotations

import base64
import time
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from ..config import get_config
from . import bounded, dynamo

ITEM_LIMIT = 390 * 1024
"""DynamoDB's 400 KB item limit, less room for the key and attribute names."""


@dataclass
class Stored:
    response: dict[str, Any]
    input_items: list[dict[str, Any]]
    conversation: list[dict[str, Any]]


class TooLarge(Exception):
    """The response, its input and the conversation do not fit one item."""


def _table() -> str:
    return get_config().need("responses_table")


def _key(caller_id: str, response_id: str) -> dict[str, Any]:
    return {"responseKey": {"S": f"{caller_id}#{response_id}"}}


async def put(caller_id: str, response_id: str, stored: Stored) -> None:
    expires = int(time.time()) + get_config().responses_ttl_days * 86_400
    response = orjson.dumps(stored.response).decode()
    items = orjson.dumps(stored.input_items).decode()
    conversation = zlib.compress(orjson.dumps(stored.conversation), 6)
    if len(response) + len(items) + len(conversation) > ITEM_LIMIT:
        raise TooLarge(f"{len(response) + len(items) + len(conversation)} bytes")
    await bounded.within("responses", dynamo.call("PutItem", {
        "TableName": _table(),
        "Item": {**_key(caller_id, response_id), "response": {"S": response}, "inputItems": {"S": items},
                 "conversation": {"B": base64.b64encode(conversation).decode()}, "expiresAt": {"N": str(expires)}},
    }, deadline=bounded.deadline()))


async def get(caller_id: str, response_id: str, *, conversation: bool = True) -> Stored | None:
    """The caller's stored response; None when it is not theirs, was deleted, or has expired (DynamoDB
    deletes expired items only within days, so expiry is checked here too)."""
    names = {"#r": "response", "#i": "inputItems", "#e": "expiresAt"} | ({"#c": "conversation"} if conversation else {})
    answer = await bounded.within("responses", dynamo.call(
        "GetItem", {"TableName": _table(), "Key": _key(caller_id, response_id), "ConsistentRead": True,
                    "ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names},
        deadline=bounded.deadline()))
    item = answer.get("Item")
    if not item or float(item.get("expiresAt", {}).get("N", "inf")) <= time.time():
        return None
    turns = orjson.loads(zlib.decompress(base64.b64decode(item["conversation"]["B"]))) \
        if conversation and "conversation" in item else []
    return Stored(orjson.loads(item["response"]["S"]), orjson.loads(item["inputItems"]["S"]), turns)


async def delete(caller_id: str, response_id: str) -> bool:
    """Whether the caller had it (and no longer has)."""
    answer = await dynamo.call("DeleteItem", {"TableName": _table(), "Key": _key(caller_id, response_id),
                                              "ReturnValues": "ALL_OLD"})
    old = answer.get("Attributes")
    return bool(old) and float(old.get("expiresAt", {}).get("N", "inf")) > time.time()
