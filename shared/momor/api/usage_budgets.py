"""GET /usage's `budgets`: the by-model and by-provider budgets (issue 38's `budgets.byModel`,
`budgets.byProvider`) of the keys the caller sees and of their organization, each with its limit,
what is spent and held and what is left of the current UTC day and month.

    "budgets": {"keys": [{"id", "name", "byModel": {name: entry}, "byProvider": {name: entry}}],
                "organization": {"id", "name", "byModel", "byProvider"} | null}
    entry = {"dailyUsd", "monthlyUsd", "spentTodayUsd", "spentThisMonthUsd", "heldUsd",
             "leftTodayUsd", "leftThisMonthUsd", "dayResets", "monthResets"}

Which keys: the caller's own when it is an API key; a member's own keys when signed in; every key of
the organization for its admins (and an operator's own organization). Revoked keys and keys with no
such budget are left out. Each budget is one read of its spend item (store/budgets.py `current`),
read a few at a time; a budget whose item cannot be read now shows its limits with its spend null
rather than failing the whole page.

The organization's come from its item when it has them (`budgets_by_model`, `budgets_by_provider` on
store/organizations.Organization); an organization without them shows null.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from ..logs import logger
from ..store import budgets, key_admin
from ..store.budgets import ORG_SUBJECT, BudgetState, ScopedBudget, scoped_budgets
from .auth import Caller

_CONCURRENT_READS = 8
"""Spend items read at once: an admin's page with many budgeted keys stays a bounded burst."""


def _usd(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def _left(limit: Decimal | None, spent: Decimal, held: Decimal) -> float | None:
    return None if limit is None else float(max(limit - spent - held, Decimal(0)))


def _entry(budget: ScopedBudget, state: BudgetState | None) -> dict[str, Any]:
    subject = budget.subject
    shown: dict[str, Any] = {"dailyUsd": _usd(subject.budget_daily), "monthlyUsd": _usd(subject.budget_monthly)}
    if state is None:  # its spend could not be read now
        return shown | {"spentTodayUsd": None, "spentThisMonthUsd": None, "heldUsd": None,
                        "leftTodayUsd": None, "leftThisMonthUsd": None, "dayResets": None, "monthResets": None}
    return shown | {
        "spentTodayUsd": float(state.spent_day), "spentThisMonthUsd": float(state.spent_month),
        "heldUsd": float(state.held_month),
        "leftTodayUsd": _left(state.daily, state.spent_day, state.held_day),
        "leftThisMonthUsd": _left(state.monthly, state.spent_month, state.held_month),
        "dayResets": state.period.day_resets.isoformat(), "monthResets": state.period.month_resets.isoformat()}


async def _entries(scoped: Iterable[ScopedBudget], gate: asyncio.Semaphore) -> dict[str, Any]:
    scoped = list(scoped)

    async def read(budget: ScopedBudget) -> BudgetState | None:
        async with gate:
            try:
                return await budgets.current(budget.subject)  # type: ignore[arg-type]  # an OrgBudget reads as a Caller
            except Exception as exc:  # the store is down: the limits are still worth showing
                logger.warning("a scoped budget's spend could not be read",
                               extra={"caller_id": budget.subject.id, "error": f"{type(exc).__name__}: {exc}"[:300]})
                return None

    states = await asyncio.gather(*(read(b) for b in scoped))
    out: dict[str, Any] = {"byModel": None, "byProvider": None}
    for budget, state in zip(scoped, states, strict=True):
        group = "byModel" if budget.kind == "model" else "byProvider"
        out[group] = (out[group] or {}) | {budget.name: _entry(budget, state)}
    return out


async def _keys(caller: Caller) -> list[tuple[str, str, tuple[ScopedBudget, ...]]]:
    """(id, name, scoped budgets) of each key whose budgets the caller sees (module docstring)."""
    if caller.kind == "key":
        return [(caller.id, caller.name, caller.scoped)] if caller.scoped else []
    if caller.admin:
        keys = await key_admin.org_keys(caller.org.id)
    elif caller.person is not None:
        keys = await key_admin.org_keys(caller.org.id, owner=caller.person)
    else:
        return []
    out = []
    for key in keys:
        if key.disabled:
            continue
        scoped = scoped_budgets(key.id, key.limits.get("budgets.byModel"), key.limits.get("budgets.byProvider"))
        if scoped:
            out.append((key.id, key.name, scoped))
    return out


async def scoped(caller: Caller) -> dict[str, Any]:
    """GET /usage's `budgets` (module docstring)."""
    gate = asyncio.Semaphore(_CONCURRENT_READS)
    keys = await _keys(caller)
    org = caller.org
    org_scoped = scoped_budgets(ORG_SUBJECT + org.id, getattr(org, "budgets_by_model", None),
                                getattr(org, "budgets_by_provider", None))
    read = await asyncio.gather(*(_entries(s, gate) for _, _, s in keys), _entries(org_scoped, gate))
    organization = {"id": org.id, "name": org.name, **read[-1]} if org_scoped else None
    return {"keys": [{"id": key_id, "name": name, **entries}
                     for (key_id, name, _), entries in zip(keys, read[:-1], strict=True)],
            "organization": organization}
