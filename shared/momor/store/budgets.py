"""Spend limits per API key: US dollars per UTC day and/or per UTC month, held and settled in DynamoDB.

    state = await admit(caller, estimate)   # None: the key has no budget
    if not state.allowed: answer 402 (state.refusal()), before any provider is called
    ... serve the call; every answer carries state.headers() (X-Momor-Budget-Remaining)
    await settle(state.spend, cost)         # when the call ends, however it ended: its real cost

Limits live on the key's item in the API-keys table (`budgetDailyUsd`, `budgetMonthlyUsd`, set by
`infra/create_api_key.py`), so they arrive with the caller (apikeys.Caller), cached as it is.

Storage: the API-keys table again (single-table design, as ratelimit.py). One item per key and
UTC month, `keyHash` = "spend#<caller id>#<YYYY-MM>", holding
    month   USD committed this month: spent, plus the holds of calls still running
    d<DD>   USD committed on day DD (calls admitted that day)
    held, h<DD>   the holds still outstanding, of the month and of day DD (so spent = month - held)
    open    the call ids whose holds are outstanding (a string set: a hold is taken and released once)
    uncounted   the call ids settled without a known hold (admitted while the store failed): it
            grows only by a month's outage calls, about 10,000 of which fill DynamoDB's 400 KB item
    calls   calls admitted; seeded: when the counters were seeded (below); expiresAt (TTL)
One item for both periods, so admission is one round trip whatever limits are set.

Hold and settle. Admission is one conditional UpdateItem: ADD the call's estimate (routing/
estimate.py: its input at the dearest candidate's price plus its output ceiling) to `month`,
`d<DD>`, `held` and `h<DD>`, on the condition that for each limit, committed + estimate <= limit.
DynamoDB expressions have no arithmetic in conditions, so the condition reads `month <= :cap` with
the cap (limit - estimate) computed here. When the call ends, one UpdateItem settles it: ADD
(cost - estimate) to the committed counters and -estimate to the holds. Concurrent admissions are
serialised by DynamoDB on the one item, so the running calls' holds are always counted: N calls at
a limit can overspend only by what their real costs exceed their estimates (the input estimate is
a heuristic), never by N calls. A call whose estimate alone is more than what is left is refused
(its 402 says so; a lower max_tokens lowers the estimate).

Seeding: a key without a limit writes nothing here (no budget write per call). So that a limit
set at noon counts the morning's spend, a month's counters start from the key's records
(spend_history.py): an admission that finds the item unseeded (its first budgeted call of the
month, or the first after `set_limits` gave a key with no limit one) sums the month's records,
SETs the counters (plus any outstanding holds), marks the item `seeded`, and admits again.
Concurrent seeders are harmless: the SET is conditional on `seeded` being absent. The seed reads a
month of records, so it is the one budget step outside MOMOR_STORE_WAIT_S (each hold is within it):
the month's first budgeted call of a key waits for it, once.

Exactly once. Every update is keyed by the call's id (its request id), so a retry whose first
answer was lost, or a settlement replayed from the spill, is applied once: a hold adds the id to
`open` on the condition it is not there yet, a settlement removes it on the condition it is, and a
ConditionalCheckFailedException on a settlement means "applied already" (deferred.py).

Store failure (MOMOR_BUDGET_STORE_FAILURE, config.py): `open` (the default) admits a call
uncounted when DynamoDB errs or does not answer within MOMOR_STORE_WAIT_S (store/bounded.py),
logging a warning, so an outage of the store never takes the router down; `closed` refuses it with
503. A hold whose answer was lost may have landed all the same, so such a call settles in two
steps: its cost is added once (on the condition its id is not in `uncounted` yet, and added to it),
then a hold of it that did land is released (on the condition its id is in `open`). A late hold
that lands after the first step is refused (a hold's condition is that its id is in neither set).
A settlement the store does not take in time is retried in the background, else spilled
(deferred.py, spill.py): the counted spend after an outage is what was spent.

Organizations (issue 26): an organization's own daily and monthly limits (organizations.py) apply on
top of its keys' own, held and settled the same way on the item "spend#org:<org id>#<YYYY-MM>"
(`OrgBudget`); a call is admitted only when every limit that applies to it admits it (api/flow.py).
An organization's month is not seeded from records (its calls are under many caller ids): its
counters start when its first budgeted call of the month is admitted, so a limit set mid-month
counts from then on.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
import uuid
from dataclasses import dataclass, replace
from decimal import ROUND_DOWN, Decimal
from typing import Any

from ..config import get_config
from ..errors import MomorError, RequestError
from ..logs import logger
from . import aws, bounded, deferred, dynamo, spend_history
from .apikeys import Caller

STORE = "budgets"
"""The budgets' name for store/bounded.py (how long a hold waits: MOMOR_STORE_WAIT_S) and deferred.py."""
REMAINING_HEADER = "X-Momor-Budget-Remaining"
_CENT_FRACTIONS = Decimal("0.000001")
_ZERO = Decimal(0)


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
    def held_attribute(self) -> str:
        return f"h{self.day.day:02d}"

    @property
    def month_start(self) -> dt.datetime:
        return dt.datetime(self.day.year, self.day.month, 1, tzinfo=dt.UTC)

    @property
    def day_resets(self) -> dt.datetime:
        return dt.datetime.combine(self.day + dt.timedelta(days=1), dt.time(), dt.UTC)

    @property
    def month_resets(self) -> dt.datetime:
        year, month = (self.day.year + 1, 1) if self.day.month == 12 else (self.day.year, self.day.month + 1)
        return dt.datetime(year, month, 1, tzinfo=dt.UTC)


ORG_SUBJECT = "org:"
"""The head of an organization's budget subject id (keys' ids are hex digits, people's `p-...`)."""
SCOPE = "~"
"""Between a key's id and the model or provider a budget of it is for (`<id>~model:<name>`, issue 38):
such a budget's counters start at its first budgeted call, as an organization's do."""


@dataclass(frozen=True, slots=True)
class OrgBudget:
    """An organization as a budget subject, in place of a Caller: its limits, its own spend item."""

    id: str
    budget_daily: Decimal | None
    budget_monthly: Decimal | None
    whose: str = "your organization's"


@dataclass(frozen=True, slots=True)
class ScopedBudget:
    """A key's budget for one model or one provider (`budgets.byModel`, `budgets.byProvider`): held for
    a call only where one of its candidates is that model's or provider's (api/flow.py), settled to
    what its attempts there cost (api/call_record.py); a candidate whose budget refuses is passed over."""

    kind: str
    """model | provider."""
    name: str
    subject: OrgBudget

    def names(self, model: str, provider: str) -> bool:
        """Whether an offering (its canonical model, its provider's name) is this budget's."""
        if self.kind == "model":
            return model.lower() == self.name.lower()
        return provider == self.name or provider.partition("@")[0] == self.name


def scoped_budgets(caller_id: str, by_model: dict[str, Any] | None, by_provider: dict[str, Any] | None,
                   whose: str = "your API key's") -> tuple[ScopedBudget, ...]:
    """A key's (or, `caller_id` "org:<id>", an organization's) budgets by model and by provider."""
    out = []
    for kind, scoped in (("model", by_model), ("provider", by_provider)):
        for name, limits in (scoped or {}).items():
            daily, monthly = limits.get("dailyUsd"), limits.get("monthlyUsd")
            if daily is not None or monthly is not None:
                out.append(ScopedBudget(kind, name, OrgBudget(f"{caller_id}{SCOPE}{kind}:{name}", daily, monthly,
                                                              f"{whose} {name}")))
    return tuple(out)


def org_budget(org_id: str, daily: Decimal | None, monthly: Decimal | None) -> OrgBudget | None:
    """The organization's budget subject, or None when it sets no limit."""
    if daily is None and monthly is None:
        return None
    return OrgBudget(ORG_SUBJECT + org_id, daily, monthly)


def spend_key(caller_id: str, period: Period) -> str:
    return f"spend#{caller_id}#{period.month}"


@dataclass(frozen=True, slots=True)
class Spend:
    """Where a call's cost settles: the key's month item, the day it was admitted on, and what it holds."""

    table: str
    caller_id: str
    period: Period
    expires: int
    hold: Decimal = _ZERO
    """The estimate held at admission (or asked to be held, when `certain` is False)."""
    call_id: str = ""
    """The call's id: what makes its hold and its settlement land once (module docstring)."""
    certain: bool = True
    """False: the store failed during admission, so whether the hold landed is not known."""

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
    """Where this call settles (None when refused)."""
    held_day: Decimal = _ZERO
    held_month: Decimal = _ZERO
    """Holds of calls still running (this one's included once admitted): not spent, not available."""
    estimate: Decimal = _ZERO
    whose: str = "this API key's"
    """Whose limits these are, as a refusal names them."""

    def _left(self) -> list[tuple[str, Decimal, Decimal]]:
        return [(name, limit, limit - spent - held) for name, limit, spent, held in (
            ("daily", self.daily, self.spent_day, self.held_day),
            ("monthly", self.monthly, self.spent_month, self.held_month)) if limit is not None]

    def remaining(self) -> Decimal:
        """USD left before the nearer limit (running calls' holds taken), never below zero."""
        return max(min(left for _, _, left in self._left()), _ZERO).quantize(_CENT_FRACTIONS, rounding=ROUND_DOWN)

    def headers(self) -> dict[str, str]:
        return {REMAINING_HEADER: format(self.remaining(), "f")}

    def refusal(self) -> RequestError:
        """402, naming the limit that is spent (or too near for this call's estimate) and when it resets."""
        name, limit, left = min(self._left(), key=lambda entry: entry[2])
        spent = self.spent_day if name == "daily" else self.spent_month
        resets = self.period.day_resets if name == "daily" else self.period.month_resets
        when = f"it resets at {resets.isoformat().replace('+00:00', 'Z')}."
        if left > 0 and self.estimate > left:
            return RequestError(
                f"Budget too low for this call: its estimated cost of up to ${self.estimate.quantize(_CENT_FRACTIONS)}"
                f" (its input, its output ceiling and any file conversions; a lower max_tokens lowers it) is more"
                f" than the ${left.quantize(_CENT_FRACTIONS, rounding=ROUND_DOWN)} left of {self.whose} {name} limit of"
                f" ${limit}; {when}", status=402)
        return RequestError(
            f"Budget exhausted: {self.whose} {name} limit of ${limit} is spent (${spent.quantize(_CENT_FRACTIONS)}"
            f" so far); {when}", status=402)

    def to_json(self) -> dict[str, Any]:
        """For GET /usage: spend against each limit (the console shows it)."""
        def usd(value: Decimal | None) -> float | None:
            return float(value) if value is not None else None

        return {
            "dailyUsd": usd(self.daily),
            "monthlyUsd": usd(self.monthly),
            "spentTodayUsd": usd(self.spent_day),
            "spentThisMonthUsd": usd(self.spent_month),
            "heldUsd": usd(self.held_month),
            "remainingUsd": usd(self.remaining()),
            "dayResets": self.period.day_resets.isoformat(),
            "monthResets": self.period.month_resets.isoformat(),
        }


def has_budget(caller: Caller) -> bool:
    return caller.budget_daily is not None or caller.budget_monthly is not None


def _now() -> dt.datetime:
    """The clock, one place for tests to move it."""
    return dt.datetime.now(dt.UTC)


def _number(item: dict[str, Any], name: str) -> Decimal:
    value = item.get(name, {}).get("N")
    return Decimal(value) if value is not None else _ZERO


def _state(caller: Caller, spend: Spend, item: dict[str, Any], allowed: bool, estimate: Decimal) -> BudgetState:
    """The state an item shows: committed counters less the holds in them."""
    held_day, held_month = _number(item, spend.period.held_attribute), _number(item, "held")
    return BudgetState(caller.budget_daily, caller.budget_monthly,
                       _number(item, spend.day_attribute) - held_day, _number(item, "month") - held_month,
                       spend.period, allowed, spend if allowed else None, held_day, held_month, estimate,
                       getattr(caller, "whose", "this API key's"))


class _Unseeded(Exception):
    """The month's item has not been seeded from the key's records yet."""


class _Changed(Exception):
    """The item read after a refused hold would admit the call: it changed in between."""


async def admit(caller: Caller, estimate: Decimal = _ZERO, call_id: str | None = None) -> BudgetState | None:
    """Hold `estimate` against the caller's limits for the call `call_id` (see the module docstring);
    None: no budget. A store failure admits uncounted (MOMOR_BUDGET_STORE_FAILURE=open) or raises a
    503 (closed), within MOMOR_STORE_WAIT_S."""
    table = get_config().api_keys_table
    if table is None or not has_budget(caller):
        return None
    period = Period.at(_now())
    spend = Spend(table, caller.id, period, int(period.month_resets.timestamp()) + 31 * 86_400, estimate,
                  call_id or uuid.uuid4().hex)
    try:
        return await _hold_seeded(caller, spend)
    except Exception as exc:  # the store failed
        return _store_failed(caller, spend, exc)


HOLD_TRIES = 4
SEED_WRITE_S = 2.0
"""How long the seed's own write may take, its retries included (the seed is outside MOMOR_STORE_WAIT_S)."""


async def _hold_seeded(caller: Caller, spend: Spend) -> BudgetState:
    """The hold, seeding the item first if need be. The item read after a failed condition may have
    changed since (seeded, or a hold released by another process): then the hold is tried again."""
    for _ in range(HOLD_TRIES - 1):
        try:
            return await bounded.within(STORE, _hold(caller, spend))
        except _Unseeded:
            await _seed(spend)  # outside the bound: once per key and month (module docstring)
        except _Changed:
            pass
    return await bounded.within(STORE, _hold(caller, spend, last=True))


async def _hold(caller: Caller, spend: Spend, *, last: bool = False) -> BudgetState:
    """The conditional UpdateItem; raises _Unseeded when the item must be seeded first, _Changed when
    the item read after a refusal would admit the call (unless `last`: then it is refused)."""
    names = {"#calls": "calls", "#exp": "expiresAt", "#s": "seeded", "#m": "month", "#d": spend.day_attribute,
             "#h": "held", "#hd": spend.period.held_attribute, "#o": "open", "#u": "uncounted"}
    values: dict[str, Any] = {":one": {"N": "1"}, ":exp": {"N": str(spend.expires)}, ":e": _n(spend.hold),
                              ":id": {"S": spend.call_id}, ":ids": {"SS": [spend.call_id]}}
    # Once per call: a retried hold whose first try landed is refused here (and found in `open` below).
    conditions = ["attribute_exists(#s)", "NOT contains(#o, :id)", "NOT contains(#u, :id)"]
    for alias, limit in (("m", caller.budget_monthly), ("d", caller.budget_daily)):
        if limit is None:
            continue
        cap = limit - spend.hold
        if cap < 0:  # the estimate alone is more than the limit: refused whatever is spent
            return _refused(caller, spend, await _read(spend), last=True)
        values[f":{alias}"] = _n(cap)
        conditions.append(f"(attribute_not_exists(#{alias}) OR #{alias} <= :{alias})")
    try:
        # The key built in the call itself: the IAM test reads its "spend#" head from here.
        answer = await dynamo.call("UpdateItem", {
            "TableName": spend.table, "Key": {"keyHash": {"S": spend_key(spend.caller_id, spend.period)}},
            "UpdateExpression": "ADD #calls :one, #m :e, #d :e, #h :e, #hd :e, #o :ids SET #exp = :exp",
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_NEW"}, deadline=bounded.deadline())
    except dynamo.DynamoError as exc:
        if exc.code != "ConditionalCheckFailedException":
            raise
        item = await _read(spend)
        if spend.call_id in item.get("open", {}).get("SS", ()):  # a retry of ours: the first try landed
            return _state(caller, spend, item, True, spend.hold)
        return _refused(caller, spend, item, last=last)
    return _state(caller, spend, answer.get("Attributes", {}), True, spend.hold)


def _refused(caller: Caller, spend: Spend, item: dict[str, Any], *, last: bool) -> BudgetState:
    if "seeded" not in item:
        raise _Unseeded
    state = _state(caller, spend, item, False, spend.hold)
    if not last and all(left >= spend.hold for _, _, left in state._left()):
        raise _Changed
    return state


async def _seed(spend: Spend) -> None:
    """The month's counters from the key's records (module docstring), once: a concurrent seeder's
    SET stands and this one's is dropped."""
    if spend.caller_id.startswith(ORG_SUBJECT) or SCOPE in spend.caller_id:
        # An organization's, or one model's or provider's within a key: counted from its first budgeted call.
        month, today = _ZERO, _ZERO
    else:
        month, today = await spend_history.spent_since(spend.caller_id, spend.period.month_start, spend.period.day)
    try:
        await dynamo.call("UpdateItem", {
            "TableName": spend.table, "Key": {"keyHash": {"S": spend_key(spend.caller_id, spend.period)}},
            # Outstanding holds stay committed: their calls settle (cost - hold) later.
            "UpdateExpression": "SET #s = :now, #m = if_not_exists(#h, :zero) + :m, "
                                "#d = if_not_exists(#hd, :zero) + :d, #exp = :exp",
            "ConditionExpression": "attribute_not_exists(#s)",
            "ExpressionAttributeNames": {"#s": "seeded", "#m": "month", "#d": spend.day_attribute, "#h": "held",
                                         "#hd": spend.period.held_attribute, "#exp": "expiresAt"},
            "ExpressionAttributeValues": {":now": {"N": str(int(time.time()))}, ":zero": {"N": "0"},
                                          ":m": _n(month), ":d": _n(today), ":exp": {"N": str(spend.expires)}},
        }, deadline=time.monotonic() + SEED_WRITE_S)
    except dynamo.DynamoError as exc:
        if exc.code != "ConditionalCheckFailedException":
            raise


def _store_failed(caller: Caller, spend: Spend, exc: Exception) -> BudgetState:
    closed = get_config().budget_store_failure == "closed"
    logger.warning("budget store unavailable; " + ("refusing the call" if closed else "admitting the call uncounted"),
                   extra={"caller_id": caller.id, "error": f"{type(exc).__name__}: {exc}"[:300]})
    if closed:
        raise MomorError("This API key's spend limit cannot be checked now (its store is unavailable); retry "
                         "shortly.", status=503)
    # Uncounted: whether the hold landed is not known; the call settles in two steps (module docstring).
    return BudgetState(caller.budget_daily, caller.budget_monthly, _ZERO, _ZERO, spend.period, True,
                       replace(spend, certain=False))


async def _read(spend: Spend) -> dict[str, Any]:
    answer = await dynamo.call("GetItem", {"TableName": spend.table,
                                           "Key": {"keyHash": {"S": spend_key(spend.caller_id, spend.period)}},
                                           "ConsistentRead": True}, deadline=bounded.deadline())
    return answer.get("Item", {})


# ---------------------------------------------------------------------------------------------
# Settlement, once per call


async def settle(spend: Spend, cost: Decimal) -> None:
    """The call has ended: release its hold and add its real cost, on the month and the day it was
    admitted on, exactly once (module docstring). Never raises: what the store does not take in time
    is written later (deferred.py)."""
    await deferred.write(deferred.Write(STORE, spend.call_id, settlement(spend, cost), runs()))


RELEASE_STEP = "budgets.release"
COUNT_STEP = "budgets.count"


def settlement(spend: Spend, cost: Decimal) -> list[tuple[str, dict[str, Any]]]:
    """The settlement as deferred.py steps, each applied once whatever is retried (module docstring):
    a known hold released with the cost; else the cost counted, then a hold that did land released."""
    at = {"table": spend.table, "callerId": spend.caller_id, "day": spend.period.day.isoformat(),
          "expires": spend.expires, "callId": spend.call_id}
    if spend.certain:
        return [(RELEASE_STEP, at | {"committed": format(cost - spend.hold, "f"), "hold": format(spend.hold, "f")})]
    return [(COUNT_STEP, at | {"cost": format(cost, "f")}),
            (RELEASE_STEP, at | {"committed": format(-spend.hold, "f"), "hold": format(spend.hold, "f")})]


async def _release(args: dict[str, Any], deadline: float | None) -> None:
    """Release the call's hold and add `committed`, if its id is in `open` (else: applied already)."""
    caller_id, period = args["callerId"], Period(dt.date.fromisoformat(args["day"]))
    await dynamo.call("UpdateItem", {
        "TableName": args["table"], "Key": {"keyHash": {"S": spend_key(caller_id, period)}},
        "UpdateExpression": "ADD #m :c, #d :c, #h :h, #hd :h DELETE #o :ids SET #exp = :exp",
        "ConditionExpression": "contains(#o, :id)",
        "ExpressionAttributeNames": {"#m": "month", "#d": period.day_attribute, "#h": "held",
                                     "#hd": period.held_attribute, "#exp": "expiresAt", "#o": "open"},
        "ExpressionAttributeValues": {":c": _n(Decimal(args["committed"])), ":h": _n(-Decimal(args["hold"])),
                                      ":id": {"S": args["callId"]}, ":ids": {"SS": [args["callId"]]},
                                      ":exp": {"N": str(args["expires"])}},
    }, deadline=deadline)


async def _count(args: dict[str, Any], deadline: float | None) -> None:
    """Add an uncounted call's cost, if its id is not in `uncounted` yet (else: applied already)."""
    caller_id, period = args["callerId"], Period(dt.date.fromisoformat(args["day"]))
    await dynamo.call("UpdateItem", {
        "TableName": args["table"], "Key": {"keyHash": {"S": spend_key(caller_id, period)}},
        "UpdateExpression": "ADD #m :c, #d :c, #u :ids SET #exp = :exp",
        "ConditionExpression": "NOT contains(#u, :id)",
        "ExpressionAttributeNames": {"#m": "month", "#d": period.day_attribute, "#u": "uncounted",
                                     "#exp": "expiresAt"},
        "ExpressionAttributeValues": {":c": _n(Decimal(args["cost"])), ":id": {"S": args["callId"]},
                                      ":ids": {"SS": [args["callId"]]}, ":exp": {"N": str(args["expires"])}},
    }, deadline=deadline)


def runs() -> dict[str, deferred.Applier]:
    """What a settlement's steps do (the Write's `run`; spill.replay)."""
    return {RELEASE_STEP: _release, COUNT_STEP: _count}


async def current(caller: Caller) -> BudgetState | None:
    """The caller's spend against its limits, without admitting anything (GET /usage)."""
    table = get_config().api_keys_table
    if table is None or not has_budget(caller):
        return None
    period = Period.at(_now())
    answer = await dynamo.call("GetItem", {"TableName": table, "Key": {"keyHash": {"S": spend_key(caller.id, period)}},
                                           "ConsistentRead": True})
    item = answer.get("Item", {})
    state = _state(caller, Spend(table, caller.id, period, 0), item, True, _ZERO)
    under = all(left > 0 for _, _, left in state._left())
    return replace(state, allowed=under, spend=None)


def set_limits(key_hash: str, *, daily: Decimal | bool | None = False, monthly: Decimal | bool | None = False,
               admin: bool | None = None) -> None:
    """Change a key's limits (a Decimal sets one, None removes it, False leaves it) and admin flag.
    Warm processes see the change within MOMOR_API_KEY_CACHE_S. A key that had no limit and now has
    one has this month's spend counters reset, so its next call seeds them from its records."""
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
    table = get_config().need("api_keys_table")
    request: dict[str, Any] = {
        "TableName": table,
        "Key": {"keyHash": {"S": key_hash}},
        "UpdateExpression": expression.strip(),
        "ConditionExpression": "attribute_exists(keyHash)",
        "ExpressionAttributeNames": names,
        "ReturnValues": "ALL_OLD",
    }
    if values:
        request["ExpressionAttributeValues"] = values
    answer = aws.client("dynamodb").update_item(**request)
    old: dict[str, Any] = answer.get("Attributes", {})  # one statement a call, as the IAM scan reads them
    had = "budgetDailyUsd" in old or "budgetMonthlyUsd" in old
    if old and not had and any(v is not False and v is not None for v in (daily, monthly)):
        unseed(table, old.get("id", {}).get("S") or key_hash[:16])  # apikeys: the id, else the hash's head


def unseed(table: str, caller_id: str) -> None:
    """Make the key's next budgeted call seed this month's counters from its records (module docstring)."""
    client = aws.client("dynamodb")
    # No spend item this month (the condition fails): the first budgeted call seeds it anyway.
    with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):
        client.update_item(
            TableName=table, Key={"keyHash": {"S": spend_key(caller_id, Period.at(_now()))}},
            UpdateExpression="REMOVE #s", ConditionExpression="attribute_exists(keyHash)",
            ExpressionAttributeNames={"#s": "seeded"})
