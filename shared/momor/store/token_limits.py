"""Token limits (issue 38): input + output tokens per minute and per UTC day, per key and per
organization, held and settled in DynamoDB as the budgets hold dollars (budgets.py).

    state = await admit(subject, estimate)  # None: the subject sets no token limit
    if not state.allowed: answer 429 (state.refusal()), before any provider is called
    ... every answer carries state.headers() (x-ratelimit-*-tokens, the names OpenAI's SDK reads)
    await settle(state.hold, used)          # when the call ends: the tokens its attempts used

Storage: the API-keys table, one item per subject and window: `tokens#<subject id>#m<minute start,
epoch s>` and `tokens#<subject id>#d<YYYY-MM-DD>`, each with `used` (tokens committed: used, plus the
holds of calls still running) and `expiresAt` for the table's TTL. Admission is one conditional ADD
per limit set (`used <= limit - estimate`), the minute's first; a day that refuses gives the minute's
hold back. The estimate is the budget's own (routing/estimate.py: the call's input tokens by the
offline count, plus its output ceiling on the candidate that may write the most), so N concurrent
calls at a limit overshoot only by what their real usage exceeds their estimates. Settlement adds
(used - estimate), to the windows the call was admitted in.

A subject with no token limit makes no trip (calls without one cost what they did). Unlike the
request rate (ratelimit.py), a token limit is not leased: its hold depends on each call's estimate,
so each call with a token limit makes one round trip per window it is held in. Store failure: the
call is admitted uncounted and a warning logged (as the rate limiter fails open).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass
from typing import Any

from ..config import get_config
from ..errors import RequestError
from ..logs import logger
from . import bounded, dynamo

STORE = "token limits"
"""The windows' name for store/bounded.py: a hold waits at most MOMOR_STORE_WAIT_S, as every other
bookkeeping step on a call's path (issue 41), then the call is admitted uncounted."""
MINUTE = 60


@dataclass(frozen=True, slots=True)
class TokenSubject:
    """Who a token limit belongs to: a key (its caller id) or an organization (`org:<id>`)."""

    id: str
    per_minute: int | None
    per_day: int | None
    whose: str = "your API key's"


@dataclass(frozen=True, slots=True)
class Hold:
    subject: str
    windows: tuple[str, ...]
    """The window items the estimate was added to."""
    estimate: int


@dataclass(frozen=True, slots=True)
class TokenState:
    allowed: bool
    limit: int
    """The nearest limit's tokens a window (the one with the fewest left)."""
    remaining: int
    reset: int
    """Seconds until that window resets."""
    whose: str
    window: str
    """minute | day."""
    hold: Hold | None = None

    def headers(self) -> dict[str, str]:
        headers = {"x-ratelimit-limit-tokens": str(self.limit),
                   "x-ratelimit-remaining-tokens": str(max(self.remaining, 0)),
                   "x-ratelimit-reset-tokens": f"{self.reset}s"}
        if not self.allowed:
            headers["Retry-After"] = str(self.reset)
        return headers

    def refusal(self) -> RequestError:
        return RequestError(
            f"Token limit exceeded: {self.whose} limit is {self.limit:,} input and output tokens a {self.window}, "
            f"and this call may use more than the {max(self.remaining, 0):,} left (its estimate: its input "
            f"and its max_tokens); retry in {self.reset} s, or lower max_tokens.", status=429)


def subject_of(subject_id: str, per_minute: int | None, per_day: int | None,
               whose: str = "your API key's") -> TokenSubject | None:
    if per_minute is None and per_day is None:
        return None
    return TokenSubject(subject_id, per_minute, per_day, whose)


def _windows(subject: TokenSubject, now: float) -> list[tuple[str, int, str, int, int]]:
    """(window: the item key after `tokens#`, limit, window word, seconds to reset, TTL epoch) for each limit set."""
    out = []
    if subject.per_minute is not None:
        start = int(now // MINUTE) * MINUTE
        out.append((f"{subject.id}#m{start}", subject.per_minute, "minute",
                    max(1, math.ceil(start + MINUTE - now)), start + 2 * MINUTE))
    if subject.per_day is not None:
        day = dt.datetime.fromtimestamp(now, dt.UTC).date()
        ends = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.UTC).timestamp()
        out.append((f"{subject.id}#d{day.isoformat()}", subject.per_day, "day",
                    max(1, math.ceil(ends - now)), int(ends) + 86400))
    return out


async def _add(table: str, window: str, amount: int, *, cap: int | None = None, ttl: int | None = None) -> int | None:
    """ADD `amount` to the window's `used` (only while used <= cap); its new value, None if refused."""
    request: dict[str, Any] = {"UpdateExpression": "ADD #u :a", "ExpressionAttributeNames": {"#u": "used"},
                               "ExpressionAttributeValues": {":a": {"N": str(amount)}}, "ReturnValues": "UPDATED_NEW"}
    if ttl is not None:
        request["UpdateExpression"] += " SET #x = :x"
        request["ExpressionAttributeNames"]["#x"] = "expiresAt"
        request["ExpressionAttributeValues"][":x"] = {"N": str(ttl)}
    if cap is not None:
        request["ConditionExpression"] = "attribute_not_exists(#u) OR #u <= :cap"
        request["ExpressionAttributeValues"][":cap"] = {"N": str(cap)}
    try:
        answer = await dynamo.call("UpdateItem", {"TableName": table, "Key": {"keyHash": {"S": f"tokens#{window}"}},
                                                  **request})
    except dynamo.DynamoError as exc:
        if exc.code == "ConditionalCheckFailedException":
            return None
        raise
    return int(answer["Attributes"]["used"]["N"])


async def admit(subject: TokenSubject, estimate: int) -> TokenState:
    """Hold `estimate` tokens in every window the subject limits (module docstring)."""
    table = get_config().need("api_keys_table")
    now = time.time()
    held: list[str] = []
    nearest: TokenState | None = None
    try:
        for key, limit, word, reset, ttl in _windows(subject, now):
            used = await bounded.within(STORE, _add(table, key, estimate, cap=limit - estimate, ttl=ttl)) \
                if estimate <= limit else None
            if used is None:
                await _release(table, held, estimate)
                return TokenState(False, limit, limit - await _used(table, key), reset, subject.whose, word)
            held.append(key)
            state = TokenState(True, limit, limit - used, reset, subject.whose, word)
            if nearest is None or state.remaining < nearest.remaining:
                nearest = state
    except (dynamo.DynamoError, OSError, TimeoutError) as exc:
        logger.warning("token limit store failed: the call is admitted uncounted",
                       extra={"caller_id": subject.id, "error": f"{type(exc).__name__}: {exc}"[:300]})
        await _release(table, held, estimate)
        return TokenState(True, 0, 0, 0, subject.whose, "minute")
    assert nearest is not None
    return TokenState(True, nearest.limit, nearest.remaining, nearest.reset, subject.whose, nearest.window,
                      Hold(subject.id, tuple(held), estimate))


async def _used(table: str, window: str) -> int:
    try:
        answer = await dynamo.call("GetItem", {"TableName": table, "Key": {"keyHash": {"S": f"tokens#{window}"}},
                                               "ConsistentRead": True})
        return int(answer.get("Item", {}).get("used", {}).get("N", "0"))
    except Exception:  # only for the refusal's "left": never worth failing it
        return 0


async def _release(table: str, keys: list[str], estimate: int) -> None:
    for key in keys:
        try:
            await _add(table, key, -estimate)
        except Exception:
            logger.exception("a token hold could not be released", extra={"window": key})


async def settle(hold: Hold, used: int) -> None:
    """The call has ended: its windows count what it used in place of its estimate. Never raises."""
    table = get_config().need("api_keys_table")
    for key in hold.windows:
        try:
            await _add(table, key, used - hold.estimate)
        except Exception:
            logger.exception("token use not settled", extra={"caller_id": hold.subject, "window": key})
