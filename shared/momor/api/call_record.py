"""The call's record, made once per call however it ended: its cost (at the prices the caller
pays), the log line, the record written to the store, the budget settled and the metrics.

api/flow.py runs the call and hands its Recorder here; nothing here changes what the caller is
answered. Where it is safe, the writing happens after the answer (background.py). The call's
OpenTelemetry spans and metrics are made here too, from the same recorder (telemetry.py).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from .. import background, metrics
from ..catalog import Prices
from ..logs import logger
from ..redact import redact
from ..routing.plan import Candidate
from ..routing.recorder import Recorder
from ..routing.request import Routed
from ..store.records import CallRecord, cost_usd, total_cost
from . import telemetry
from .backend import Backend


async def record_call(backend: Backend, recorder: Recorder, routed: Routed | None = None) -> None:
    """The record, a log line and metrics, once per call: after the answer where that is safe
    (background.py), since holding the answer for a DynamoDB write was most of Momor's cost."""
    if recorder.written:
        return
    recorder.written = True
    recorder.mark_end()
    billed = routed.billed_prices if routed is not None else None
    await background.later(recorder.request_id, _written(backend, recorder, billed))


def _billed_cost(recorder: Recorder, billed: Callable[[Candidate], Prices | None]) -> Decimal | None:
    """The call's cost with the served answer at the prices the caller pays (overflow: the asked
    model's); None when those are the served offering's own. Failed attempts keep their cost."""
    served = recorder.served()
    prices = billed(served.candidate) if served is not None else None
    if served is None or prices is None or served.attempt.usage is None or served.attempt.key_source == "cache":
        return None  # a cache hit (api/cached.py) costs nothing, whatever its prices
    others = sum((a.cost for a in recorder.attempts if a is not served.attempt and a.cost is not None), Decimal(0))
    return others + cost_usd(served.attempt.usage, prices)


async def _write(backend: Backend, recorder: Recorder, billed: Callable[[Candidate], Prices | None] | None = None
                 ) -> None:
    """A record that cannot be written is logged loudly, never allowed to fail the answer."""
    record = recorder.to_record()
    if billed is not None:
        record.cost = _billed_cost(recorder, billed)
    served = record.served
    logger.info(
        "call",
        extra={
            "request_id": recorder.request_id,
            "correlation_id": recorder.gateway_request_id,
            "route": recorder.route,
            "status": recorder.status_code,
            "attempts": len(record.attempts),
            "served": f"{served.model}@{served.provider}" if served else None,
            "error": redact(recorder.error, recorder.secrets) if recorder.error else None,
        },
    )
    try:
        await backend.write_record(record, recorder.secrets)
    except Exception:
        logger.exception("call record not written", extra={"request_id": recorder.request_id})
    await _settle(backend, recorder, record)
    try:
        metrics.emit(record)
    except Exception:
        logger.exception("call metrics not written", extra={"request_id": recorder.request_id})
    telemetry.export(recorder, record)  # OpenTelemetry, when an endpoint is set; never raises


async def _written(backend: Backend, recorder: Recorder, billed: Callable[[Candidate], Prices | None] | None = None
                   ) -> None:
    """The record, then the budget's settlement, which happens even if the record could not be built."""
    try:
        await _write(backend, recorder, billed)
    finally:
        await _settle(backend, recorder, None)  # nothing left to settle unless _write failed before it


async def _settle(backend: Backend, recorder: Recorder, record: CallRecord | None) -> None:
    """The budget's hold released and the real cost added, however the call ended (failed, cut,
    cancelled). Without a record (a bug building it) the estimate held is taken as the cost: it is
    the most the call could have cost."""
    spends, recorder.spend = recorder.spend, None
    for spend in spends or ():  # the key's, and its organization's
        try:
            await backend.settle_spend(spend, total_cost(record) if record is not None else spend.hold)
        except Exception:
            logger.exception("call cost not settled on a budget", extra={"request_id": recorder.request_id})
