"""DynamoDB's attribute-value JSON (`{"S": "x"}`, `{"N": "1.5"}`, `{"M": {...}}` ...) for the plain
values Momor stores, both ways.

boto3's TypeSerializer and TypeDeserializer do this too, but importing them imports boto3 (and
s3transfer), about 65-100 ms of a Lambda's first call on one vCPU (infra/bench/PROPOSALS.md §6), for
a call record that needs six types. This writes the same JSON boto3 writes for them:

    str -> S    bool -> BOOL    None -> NULL (true)    int, Decimal -> N    dict -> M    list, tuple -> L
    bytes -> B (base64 on the wire, as the JSON protocol carries binary)

A number is written as boto3 writes it: its Decimal text through DynamoDB's own limits (38 digits
of precision, exponents from -130 to 125; anything that would be rounded, or is not finite, is
refused rather than stored wrong). A float is refused as boto3 refuses it: records turn floats into
Decimals first (records._clean), choosing the digits themselves. Reading accepts every type
DynamoDB has (sets included, as Python sets, as boto3 gives them), numbers as Decimal.
"""

from __future__ import annotations

import base64
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from typing import Any

# DynamoDB's number limits, as boto3 encodes them (boto3.dynamodb.types.DYNAMODB_CONTEXT): a value
# that would lose a digit raises instead.
_NUMBERS = Context(Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow])


def _number(value: int | Decimal) -> str:
    text = str(_NUMBERS.create_decimal(value))
    if text in ("Infinity", "-Infinity", "NaN", "-NaN", "sNaN", "-sNaN"):
        raise TypeError(f"DynamoDB cannot store the number {text}")
    return text


def serialize(value: Any) -> dict[str, Any]:
    """One value as an attribute value (the type table in the module docstring)."""
    # Exact type checks first: they are the common case and the cheapest (bool before int: a bool is one).
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is bool:
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if kind is dict:
        return {"M": {_key(k): serialize(v) for k, v in value.items()}}
    if kind is list or kind is tuple:
        return {"L": [serialize(v) for v in value]}
    if kind is int or kind is Decimal:
        return {"N": _number(value)}
    if isinstance(value, bytes | bytearray):
        return {"B": base64.b64encode(value).decode("ascii")}
    return _subclass(value)


def _subclass(value: Any) -> dict[str, Any]:
    """The same table for subclasses (a str enum, an OrderedDict), checked in boto3's order."""
    if isinstance(value, bool):
        return {"BOOL": bool(value)}
    if isinstance(value, float):
        raise TypeError("floats are not stored as DynamoDB numbers: pass a Decimal (its digits chosen)")
    if isinstance(value, int | Decimal):
        return {"N": _number(Decimal(value))}
    if isinstance(value, str):
        return {"S": str(value)}
    if isinstance(value, dict):
        return {"M": {_key(k): serialize(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [serialize(v) for v in value]}
    raise TypeError(f"no DynamoDB attribute value for {type(value).__name__}")


def _key(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a DynamoDB map's keys are strings, not {type(name).__name__}")
    return name


def to_item(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A document (str keys) as an item: each attribute serialized."""
    return {_key(name): serialize(value) for name, value in document.items()}


def deserialize(attribute: dict[str, Any]) -> Any:
    """One attribute value as a Python value (numbers as Decimal, binary as bytes, sets as sets)."""
    if len(attribute) != 1:
        raise TypeError(f"an attribute value has one type, not {sorted(attribute)}")
    ((kind, value),) = attribute.items()
    if kind == "S":
        return value
    if kind == "N":
        return _NUMBERS.create_decimal(value)
    if kind == "M":
        return {k: deserialize(v) for k, v in value.items()}
    if kind == "L":
        return [deserialize(v) for v in value]
    if kind == "BOOL":
        return value
    if kind == "NULL":
        return None
    if kind == "B":
        return base64.b64decode(value)
    if kind == "SS":
        return set(value)
    if kind == "NS":
        return {_NUMBERS.create_decimal(v) for v in value}
    if kind == "BS":
        return {base64.b64decode(v) for v in value}
    raise TypeError(f"unknown DynamoDB attribute type {kind!r}")


def from_item(item: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An item as a document: each attribute deserialized."""
    return {name: deserialize(value) for name, value in item.items()}
