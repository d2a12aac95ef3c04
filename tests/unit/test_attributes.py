"""Momor's own DynamoDB attribute values (store/attributes.py): the exact JSON DynamoDB's wire carries,
the same boto3's TypeSerializer / TypeDeserializer make for the types records use, and DynamoDB's
number limits enforced rather than a digit lost."""

from __future__ import annotations

import datetime as dt
import enum
import json
from decimal import Decimal, Inexact, Rounded

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from momor.events import Usage
from momor.store import attributes
from momor.store.records import Attempt, CallRecord, Served, to_item

DOCUMENT = {
    "id": "r1",
    "streaming": False,
    "served": None,
    "cost": Decimal("0.0000125"),
    "status": 200,
    "latencyMs": Decimal("12.5"),
    "attempts": [{"provider": "openai", "usage": {"input_tokens": 3}, "delivered": True, "error": None}],
    "selectors": ("a", "b"),
    "empty": {},
    "none": [],
    "big": Decimal("-1.2345678901234567890123456789012345678E+120"),
    "tiny": Decimal("1E-130"),
}

WIRE = {
    "id": {"S": "r1"},
    "streaming": {"BOOL": False},
    "served": {"NULL": True},
    "cost": {"N": "0.0000125"},
    "status": {"N": "200"},
    "latencyMs": {"N": "12.5"},
    "attempts": {"L": [{"M": {"provider": {"S": "openai"}, "usage": {"M": {"input_tokens": {"N": "3"}}},
                              "delivered": {"BOOL": True}, "error": {"NULL": True}}}]},
    "selectors": {"L": [{"S": "a"}, {"S": "b"}]},
    "empty": {"M": {}},
    "none": {"L": []},
    "big": {"N": "-1.2345678901234567890123456789012345678E+120"},
    "tiny": {"N": "1E-130"},
}


def test_the_exact_wire_json():
    item = attributes.to_item(DOCUMENT)
    assert item == WIRE
    # What goes on the wire is this, byte for byte once encoded (no Decimal or tuple left in it).
    assert json.loads(json.dumps(item)) == WIRE


def test_the_same_as_boto3_for_every_type_records_use():
    boto = TypeSerializer()
    assert attributes.to_item(DOCUMENT) == {name: boto.serialize(value) for name, value in DOCUMENT.items()}


def test_a_whole_record_as_boto3_would_write_it():
    usage = Usage(input_tokens=10, output_tokens=5)
    record = CallRecord(
        id="r2", caller_id="c1", dialect="openai", route="/v1/chat/completions", selectors={"model": "m"},
        streaming=True, status=200, served=Served("m", "openai", None, "openai"), usage=usage,
        attempts=[Attempt("openai", "m", "gpt-x", "saved", "ok", http_status=200, latency_ms=3.25, usage=usage,
                          cost=Decimal("0.001"), delivered=True)],
        created=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), latency_ms=4.5, first_byte_ms=1.0,
    )
    item = to_item(record, ttl_days=1)
    from momor.store import record_item, records

    document = record_item.split(records._clean(record.to_dict(1), ()))  # the stored form (record_item.py)
    boto = TypeSerializer()
    # botocore base64-encodes a binary value (the record's detail) on the wire; ours is the wire's form.
    assert {k: _binary_decoded(v) for k, v in item.items()} == {name: boto.serialize(value)
                                                                for name, value in document.items()}
    assert item["latencyMs"] == {"N": "4.5"} and item["expiresAt"] == {"N": str(1767323045 + 86_400)}


def test_reading_back_gives_what_boto3_gives():
    boto = TypeDeserializer()
    wire = {**WIRE, "b": {"B": "AAH/"}, "ss": {"SS": ["x", "y"]}, "ns": {"NS": ["1", "2.50"]},
            "bs": {"BS": ["AA=="]}}
    ours = attributes.from_item(wire)
    theirs = {name: boto.deserialize(_binary_decoded(value)) for name, value in wire.items()}
    assert ours["b"] == b"\x00\x01\xff" and ours["bs"] == {b"\x00"}
    assert {k: v for k, v in ours.items() if k not in ("b", "bs")} == {
        k: v for k, v in theirs.items() if k not in ("b", "bs")}
    assert ours["latencyMs"] == Decimal("12.5") and isinstance(ours["status"], Decimal)
    assert ours["ns"] == {Decimal(1), Decimal("2.5")}


def _binary_decoded(value):
    # botocore decodes the wire's base64 before boto3's deserializer sees a binary value.
    import base64

    if "B" in value:
        return {"B": base64.b64decode(value["B"])}
    if "BS" in value:
        return {"BS": [base64.b64decode(v) for v in value["BS"]]}
    return value


def test_round_trip():
    assert attributes.from_item(attributes.to_item(DOCUMENT)) == {**DOCUMENT, "selectors": ["a", "b"]}


class Kind(enum.StrEnum):
    OK = "ok"


class Count(enum.IntEnum):
    ONE = 1


def test_subclasses_as_their_base_types():
    assert attributes.serialize(Kind.OK) == {"S": "ok"}
    assert attributes.serialize(Count.ONE) == {"N": "1"}
    assert attributes.serialize(bytearray(b"\x00")) == {"B": "AA=="}


@pytest.mark.parametrize("number, error", [
    (Decimal("1.23456789012345678901234567890123456789"), (Inexact, Rounded)),  # 39 digits
    (10**40 + 1, (Inexact, Rounded)),
    (Decimal("NaN"), (TypeError, ArithmeticError)),
    (Decimal("Infinity"), TypeError),
])
def test_numbers_dynamodb_cannot_hold_are_refused_not_rounded(number, error):
    with pytest.raises(error):
        attributes.serialize(number)
    with pytest.raises(error):  # boto3 refuses the same numbers
        TypeSerializer().serialize(number)


@pytest.mark.parametrize("value", [1.5, {1: "x"}, {"a"}, object()])
def test_what_has_no_attribute_value_is_refused(value):
    with pytest.raises(TypeError):
        attributes.serialize(value)


def test_a_malformed_attribute_value_is_refused():
    with pytest.raises(TypeError):
        attributes.deserialize({"S": "a", "N": "1"})
    with pytest.raises(TypeError):
        attributes.deserialize({"X": 1})
