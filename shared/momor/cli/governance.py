"""The governance flags of `momor keys create|update`, turned into the key API's body (api/key_routes.py).

    --rpm N                    limits.rateLimitPerMinute   --tokens-per-minute N   limits.tokensPerMinute
    --tokens-per-day N         limits.tokensPerDay         --daily-usd N           limits.budgetDailyUsd
    --monthly-usd N            limits.budgetMonthlyUsd     --max-cost-per-call-usd N  limits.maxCostPerCallUsd
    --zdr / --no-zdr           limits.zdr                  --cache / --no-cache    limits.cache
    --cache-ttl SECONDS        limits.cacheTtlS            --expires-at WHEN       expiresAt
    --allow-model SELECTOR     allow.models (repeat)       --allow-provider NAME   allow.providers (repeat)
    --budget-model NAME=USD/PERIOD    budgets.byModel      --budget-provider NAME=USD/PERIOD  budgets.byProvider
    --guardrails FILE          guardrails (a JSON policy)

`none` for any of them sends null: no limit (for the rate, the deployment's), no list, no expiry.
Values go to the API as written (a number when they read as one): the API checks them, and its
refusal, naming the field, is what the command prints. Only what has no JSON form of its own is
read here: a budget's `NAME=USD/day|month`, an expiry `+7d` (from now), the guardrails file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

NONE = "none"
UNSET: Any = object()
"""The default of a flag whose `none` is a value of its own (null), so it and leaving the flag out differ."""
LIMITS = (
    ("rpm", "rateLimitPerMinute", "N|none", "requests a minute (none: the deployment's MOMOR_RATE_LIMIT; 0: no limit)"),
    ("tokens_per_minute", "tokensPerMinute", "N|none", "input + output tokens a minute"),
    ("tokens_per_day", "tokensPerDay", "N|none", "input + output tokens a UTC day"),
    ("daily_usd", "budgetDailyUsd", "USD|none", "spend limit per UTC day"),
    ("monthly_usd", "budgetMonthlyUsd", "USD|none", "spend limit per UTC month"),
    ("max_cost_per_call_usd", "maxCostPerCallUsd", "USD|none",
     "a call whose estimated cost is more is refused before any provider is asked"),
    ("cache_ttl", "cacheTtlS", "SECONDS|none", "how long the response cache keeps its calls' answers"),
)
FLAGS = (("zdr", "zdr", "hold every call to zero data retention"),
         ("cache", "cache", "its calls use the response cache unless a call says otherwise"))
PERIODS = {"day": "dailyUsd", "daily": "dailyUsd", "month": "monthlyUsd", "monthly": "monthlyUsd"}
UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for dest, _, metavar, text in LIMITS:
        parser.add_argument("--" + dest.replace("_", "-"), dest=dest, metavar=metavar, help=text)
    for dest, _, text in FLAGS:
        parser.add_argument("--" + dest, dest=dest, action=argparse.BooleanOptionalAction, default=None, help=text)
    parser.add_argument("--allow-model", action="append", metavar="SELECTOR|none",
                        help="a model selector the key may reach (a name, publisher/name, publisher/*, tier/X); "
                             "repeat; none: no list")
    parser.add_argument("--allow-provider", action="append", metavar="NAME|none",
                        help="a provider the key may reach; repeat; none: no list")
    add_budget_arguments(parser, "")
    parser.add_argument("--expires-at", type=_when, default=UNSET, metavar="WHEN|none",
                        help="when the key stops working: ISO 8601 with its offset (2026-12-31T18:00:00Z) or "
                             "from now (+7d, +12h, +30m); none: never")
    parser.add_argument("--guardrails", type=_policy, default=UNSET, metavar="FILE|none",
                        help="the key's own guardrail policy, a JSON file ({\"input\": [...], \"output\": [...]}); "
                             "none: clear it")


def _value(text: str) -> Any:
    """A flag's text as JSON: null for none, a number where it reads as one, else the text itself."""
    if text.strip().lower() == NONE:
        return None
    for kind in (int, float):
        try:
            number = kind(text)
        except ValueError:
            continue
        # inf and nan have no JSON form: sent as text, they get the API's own refusal naming the field.
        return number if math.isfinite(number) else text
    return text


def _budget(text: str) -> tuple[str, str | None, Any]:
    if text.strip().lower() == NONE:
        return ("", None, None)
    name, equals, rest = text.partition("=")
    amount, slash, period = rest.rpartition("/")
    if not (equals and slash and name.strip()) or period.strip().lower() not in PERIODS:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=USD/day or NAME=USD/month (e.g. claude-opus-4=50/month)")
    return (name.strip(), PERIODS[period.strip().lower()], _value(amount))


def _when(text: str) -> Any:
    if text.strip().lower() == NONE:
        return None
    if text.startswith("+") and text[-1:] in UNITS and text[1:-1].isdigit():
        at = dt.datetime.now(dt.UTC) + dt.timedelta(**{UNITS[text[-1]]: int(text[1:-1])})
        return at.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return text  # the API reads ISO 8601 and says what is wrong with anything else


def _policy(text: str) -> Any:
    if text.strip().lower() == NONE:
        return None
    try:
        return json.loads(Path(text).read_text())
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text} is not JSON: {exc}") from None


def _listed(entries: list[str] | None) -> Any:
    if any(e.strip().lower() == NONE for e in entries or ()):
        return None
    return entries


def _scoped(budgets: list[tuple[str, str | None, Any]]) -> Any:
    if any(period is None for _, period, _ in budgets):
        return None
    out: dict[str, dict[str, Any]] = {}
    for name, period, amount in budgets:
        out.setdefault(name, {})[period or ""] = amount
    return out


def add_budget_arguments(parser: argparse.ArgumentParser, whose: str) -> None:
    """--budget-model and --budget-provider (read by `scoped_budgets`); `whose`: what the limit covers."""
    for kind in ("model", "provider"):
        parser.add_argument(f"--budget-{kind}", action="append", type=_budget, metavar=f"{kind.upper()}=USD/PERIOD",
                            help=f"budgets.by{kind.title()}: a spend limit on one {kind}{whose}, e.g. "
                                 f"claude-opus-4=50/month (period: day or month); repeat; none: no budgets by {kind}")


def scoped_budgets(args: argparse.Namespace) -> dict[str, Any]:
    """`budgets` from --budget-model / --budget-provider, for a key's body and an organization's alike."""
    return {field: _scoped(getattr(args, dest)) for dest, field in (("budget_model", "byModel"),
                                                                    ("budget_provider", "byProvider"))
            if getattr(args, dest) is not None}


def body(args: argparse.Namespace) -> dict[str, Any]:
    """The key API's body for what the flags give; what they leave out is not in it (left as it is)."""
    out: dict[str, Any] = {}
    limits = {field: _value(getattr(args, dest)) for dest, field, _, _ in LIMITS if getattr(args, dest) is not None}
    limits |= {field: getattr(args, dest) for dest, field, _ in FLAGS if getattr(args, dest) is not None}
    if limits:
        out["limits"] = limits
    allow = {field: _listed(getattr(args, dest)) for dest, field in (("allow_model", "models"),
                                                                    ("allow_provider", "providers"))
             if getattr(args, dest) is not None}
    if allow:
        out["allow"] = allow
    budgets = scoped_budgets(args)
    if budgets:
        out["budgets"] = budgets
    if args.expires_at is not UNSET:
        out["expiresAt"] = args.expires_at
    if args.guardrails is not UNSET:
        out["guardrails"] = args.guardrails
    return out
