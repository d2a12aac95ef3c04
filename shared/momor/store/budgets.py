"""Spend limits per API key: US dollars per UTC day and/or per UTC month, counted in DynamoDB.

    state = await admit(caller)              # None: the key has no budget
    if state and not state.allowed: answer 402 (state.refusal()), before any provider is called
    ... serve the call; every answer carries state.headers() (X-Momor-Budget-Remaining)
    await add_spend(state.spend, cost)       # after the call's record: what it cost, atomically

Limits live on the key's item in the API-keys table (`budgetDailyUsd`, `budgetMonthlyUsd`, set by
`infra/create_api_key.py`), so they arrive with the caller (apikeys.Caller), cached as it is.

Storage: the API-keys table again (single-table design, as ratelimit.py). One item per key and
UTC month, `keyHash` = "spend#<caller id>#<YYYY-MM>", holding `month` (USD spent this month),
`d<DD>` (USD spent on day DD), `calls` (calls admitted) and `expiresAt` (TTL, a month after the
month ends). One item for both periods, so admission is one round trip whatever limits are set.

Admission is one conditional UpdateItem: ADD calls 1, on the condition that the month's and the
day's spend are still under their limits. DynamoDB applies it atomically, and ReturnValues gives
the spend so far in the same trip (the remaining budget the answer reports). A refused call writes
nothing. The cost is added after the call with one unconditional ADD (the provider billed it,
whatever the limit says), made through `dynamo.call` like the record itself.

The race, and its bound: a call is admitted when the spend *so far* is under the limit; its own
cost is known only when it ends. Calls admitted while others are still running each see the spend
without the running calls' costs, so a key can end past its limit by at most the cost of the calls
in flight when the limit was crossed (and of a call whose cost lands a moment after its answer:
records and spend are written just after the answer, see background.py). Once the spend is past
the limit, every later admission sees it and is refused: it never grows further.

Fail open, as the rate limiter does: if DynamoDB errs or does not answer in time, the call is
admitted uncounted and a warning logged; an outage of the store must not take the router down.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import Any

from ..config import get_config
from ..errors import RequestError
from ..logs import logger
from . import aws, dynamo
from .apikeys import Caller

DYNAMODB_TIMEOUT_S = 2.0
REMAINING_HEADER = "X-Momor-Budget-Remaining"
_CENT_FRACTIONS = Decimal("0.000001")


def _n(value: Decimal) -> dict[str, str]:
    return {"N": format(value, "f")}


@dataclass(frozen=True, slots=True)
class Period:
    """The UTC day and month an instant falls in, and when each resets."""

    day: dt.date

    @classmethod
    def at(cls, now: dt.datetime) -> Period:
        return cls(now.astimezone(dt.UTC).date())

    @property
    def month(self) -> str:
        return f"{self.day.year:04d}-{self.day.month:02d}"

    @property
    def day_attribute(self) -> str:
        return f"d{self.day.day:02d}"

    @property
    def day_resets(self) -> dt.datetime:
        return dt.datetime.combine(self.day + dt.timedelta(days=1), dt.time(), dt.UTC)

    @property
    def month_resets(self) -> dt.datetime:
        year, month = (self.day.year + 1, 1) if self.day.month == 12 else (self.day.year, self.day.month + 1)
        return dt.datetime(year, month, 1, tzinfo=dt.UTC)


def spend_key(caller_id: str, period: Period) -> str:
    return f"spend#{caller_id}#{period.month}"


@dataclass(frozen=True, slots=True)
class Spend:
    """Where a call's cost goes: the key's month item and the day it was admitted on."""

    table: str
    caller_id: str
    period: Period
    expires: int

    @property
    def day_attribute(self) -> str:
        return self.period.day_attribute


@dataclass(frozen=True, slots=True)
class BudgetState:
    daily: Decimal | None
    monthly: Decimal | None
    spent_day: Decimal
    spent_month: Decimal
    period: Period
    allowed: bool
    spend: Spend | None = None
    """None when the store could not be asked (failed open): nothing is counted."""

    def remaining(self) -> Decimal:
        """USD left before the nearer limit, never below zero."""
        left = [limit - spent for limit, spent in ((self.daily, self.spent_day), (self.monthly, self.spent_month))
                if limit is not None]
        return max(min(left), Decimal(0)).quantize(_CENT_FRACTIONS, rounding=ROUND_DOWN)

    def headers(self) -> dict[str, str]:
        return {REMAINING_HEADER: format(self.remaining(), "f")}

    def refusal(self) -> RequestError:
        """402, naming the limit that is spent and when it resets."""
        if self.daily is not None and (self.spent_day >= self.daily or self.daily <= 0):
            name, limit, spent, resets = "daily", self.daily, self.spent_day, self.period.day_resets
        else:
            name, limit, spent = "monthly", self.monthly or Decimal(0), self.spent_month
            resets = self.period.month_resets
        return RequestError(
            f"Budget exhausted: this API key's {name} limit of ${limit} is spent (${spent.quantize(_CENT_FRACTIONS)}"
            f" so far); it resets at {resets.isoformat().replace('+00:00', 'Z')}.",
            status=402,
        )

    def to_json(self) -> dict[str, Any]:
        """For GET /usage: spend against each limit (the console shows it)."""
        def usd(value: Decimal | None) -> float | None:
            return float(value) if value is not None else None

        return {
            "dailyUsd": usd(self.daily),
            "monthlyUsd": usd(self.monthly),
            "spentTodayUsd": usd(self.spent_day),
            "spentThisMonthUsd": usd(self.spent_month),
            "remainingUsd": usd(self.remaining()),
            "dayResets": self.period.day_resets.isoformat(),
            "monthResets": self.period.month_resets.isoformat(),
        }


def has_budget(caller: Caller) -> bool:
    return caller.budget_daily is not None or caller.budget_monthly is not None


def _now() -> dt.datetime:
    """The clock, one place for tests to move it."""
    return dt.datetime.now(dt.UTC)


def _spent(item: dict[str, Any], name: str) -> Decimal:
    value = item.get(name, {}).get("N")
    return Decimal(value) if value is not None else Decimal(0)


async def admit(caller: Caller) -> BudgetState | None:
    """Admit one call against the caller's budget (see the module docstring); None: no budget.
    Never raises for a store failure (fail open)."""
    table = get_config().api_keys_table
    if table is None or not has_budget(caller):
        return None
    period = Period.at(_now())
    spend = Spend(table, caller.id, period, int(period.month_resets.timestamp()) + 31 * 86_400)
    names = {"#calls": "calls", "#exp": "expiresAt"}
    values: dict[str, Any] = {":one": {"N": "1"}, ":exp": {"N": str(spend.expires)}}
    conditions = []
    for alias, attribute, limit in (("m", "month", caller.budget_monthly), ("d", spend.day_attribute,
                                                                          caller.budget_daily)):
        if limit is not None:
            names[f"#{alias}"] = attribute
            values[f":{alias}"] = _n(limit)
            conditions.append(f"(attribute_not_exists(#{alias}) OR #{alias} < :{alias})")
    update = {
        "UpdateExpression": "ADD #calls :one SET #exp = :exp",
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ReturnValues": "ALL_NEW",
    }
    allowed = True
    try:
        if any(limit is not None and limit <= 0 for limit in (caller.budget_daily, caller.budget_monthly)):
            # Nothing may be spent. (The condition below would admit a first call: a spend item
            # that does not exist yet passes `attribute_not_exists`.)
            allowed, item = False, await _read(spend)
        else:
            try:
                # The key built in the call itself: the IAM test reads its "spend#" head from here.
                answer = await asyncio.wait_for(dynamo.call("UpdateItem", {
                    "TableName": table, "Key": {"keyHash": {"S": spend_key(spend.caller_id, spend.period)}},
                    **update}), DYNAMODB_TIMEOUT_S)
                item = answer.get("Attributes", {})
            except dynamo.DynamoError as exc:
                if exc.code != "ConditionalCheckFailedException":
                    raise
                allowed, item = False, await _read(spend)
    except Exception as exc:  # the store failed: admit uncounted (module docstring)
        logger.warning("budget store unavailable; admitting the call uncounted",
                       extra={"caller_id": caller.id, "error": f"{type(exc).__name__}: {exc}"[:300]})
        return BudgetState(caller.budget_daily, caller.budget_monthly, Decimal(0), Decimal(0), period, True)
    return BudgetState(caller.budget_daily, caller.budget_monthly, _spent(item, spend.day_attribute),
                       _spent(item, "month"), period, allowed, spend if allowed else None)


async def _read(spend: Spend) -> dict[str, Any]:
    answer = await asyncio.wait_for(
        dynamo.call("GetItem", {"TableName": spend.table,
                                "Key": {"keyHash": {"S": spend_key(spend.caller_id, spend.period)}},
                                "ConsistentRead": True}),
        DYNAMODB_TIMEOUT_S,
    )
    return answer.get("Item", {})


async def add_spend(spend: Spend, cost: Decimal) -> None:
    """Add a finished call's cost to the month and the day it was admitted on. Raises
    dynamo.DynamoError: the caller logs it (the answer has gone)."""
    if cost <= 0:
        return
    await dynamo.call("UpdateItem", {
        "TableName": spend.table,
        "Key": {"keyHash": {"S": spend_key(spend.caller_id, spend.period)}},
        "UpdateExpression": "ADD #m :c, #d :c SET #exp = :exp",
        "ExpressionAttributeNames": {"#m": "month", "#d": spend.day_attribute, "#exp": "expiresAt"},
        "ExpressionAttributeValues": {":c": _n(cost), ":exp": {"N": str(spend.expires)}},
    })


async def current(caller: Caller) -> BudgetState | None:
    """The caller's spend against its limits, without admitting anything (GET /usage)."""
    table = get_config().api_keys_table
    if table is None or not has_budget(caller):
        return None
    period = Period.at(_now())
    answer = await dynamo.call("GetItem", {"TableName": table, "Key": {"keyHash": {"S": spend_key(caller.id, period)}},
                                           "ConsistentRead": True})
    item = answer.get("Item", {})
    spent_day, spent_month = _spent(item, period.day_attribute), _spent(item, "month")
    under = all(limit is None or spent < limit for limit, spent in
                ((caller.budget_daily, spent_day), (caller.budget_monthly, spent_month)))
    return BudgetState(caller.budget_daily, caller.budget_monthly, spent_day, spent_month, period, under)


def set_limits(key_hash: str, *, daily: Decimal | bool | None = False, monthly: Decimal | bool | None = False,
               admin: bool | None = None) -> None:
    """Change a key's limits (a Decimal sets one, None removes it, False leaves it) and admin flag.
    Warm processes see the change within MOMOR_API_KEY_CACHE_S."""
    sets, removes = [], []
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    for alias, attribute, value in (("d", "budgetDailyUsd", daily), ("m", "budgetMonthlyUsd", monthly)):
        if value is False:
            continue
        names[f"#{alias}"] = attribute
        if value is None:
            removes.append(f"#{alias}")
        else:
            if value < 0:
                raise ValueError(f"{attribute} must not be negative")
            sets.append(f"#{alias} = :{alias}")
            values[f":{alias}"] = _n(Decimal(value))
    if admin is not None:
        names["#a"] = "admin"
        sets.append("#a = :a")
        values[":a"] = {"BOOL": admin}
    if not names:
        return
    expression = (f"SET {', '.join(sets)} " if sets else "") + (f"REMOVE {', '.join(removes)}" if removes else "")
    request: dict[str, Any] = {
        "TableName": get_config().need("api_keys_table"),
        "Key": {"keyHash": {"S": key_hash}},
        "UpdateExpression": expression.strip(),
        "ConditionExpression": "attribute_exists(keyHash)",
        "ExpressionAttributeNames": names,
    }
    if values:
        request["ExpressionAttributeValues"] = values
    aws.client("dynamodb").update_item(**request)
