"""The flow's budget admission when the caller leaves during the store's round trip: a hold the
store took after the caller had gone is released (settled at no cost), never left standing."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest

from momor.api import flow
from momor.routing.recorder import Recorder
from momor.store import budgets
from momor.store.apikeys import Caller

SPEND = budgets.Spend("keys", "caller", budgets.Period(dt.date(2026, 12, 1)), 0, Decimal("0.5"))


class SlowStore:
    def __init__(self) -> None:
        self.answer = asyncio.Event()
        self.settled: list[tuple[budgets.Spend, Decimal]] = []

    async def admit_budget(self, caller, estimate, call_id=None):
        await self.answer.wait()
        return budgets.BudgetState(Decimal(1), None, Decimal(0), Decimal(0), SPEND.period, True, SPEND)

    async def settle_spend(self, spend, cost):
        self.settled.append((spend, cost))


def test_a_hold_taken_after_the_caller_left_is_released():
    async def scenario():
        store = SlowStore()
        admission = flow._Admission()
        admission._caller = (store, Caller(id="caller", name="n", budget_daily=Decimal(1)))
        checking = asyncio.ensure_future(admission.check(Recorder("r", "/models", "native"), lambda: Decimal("0.5")))
        await asyncio.sleep(0.01)
        checking.cancel()  # the caller hangs up while the store is asked
        with pytest.raises(asyncio.CancelledError):
            await checking
        assert store.settled == []
        store.answer.set()  # the store answers: the hold was taken
        for _ in range(10):
            await asyncio.sleep(0.01)
        return store.settled

    assert asyncio.run(scenario()) == [(SPEND, Decimal(0))]
