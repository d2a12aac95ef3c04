"""GET /audit: the organization's audit log (store/audit.py), for its admins (and operators), served by
the usage function beside the key API, in problem documents.

    GET /audit?from=&to=&limit=   {"data": [entry, ...]} newest first; `from` and `to` ISO 8601 dates or
                                  times (default: the last 30 days), `limit` 1 to 1,000 (default 100)
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..door_http import json_response
from ..errors import RequestError
from ..store import audit
from .auth import Caller

LIMIT_MAX = 1000
DEFAULT_DAYS = 30


def actor(caller: Caller) -> dict[str, Any]:
    """Who made a change, as an entry names them (never their credential)."""
    return {"id": caller.id, "name": caller.name, "kind": caller.kind, "role": caller.role}


def _instant(value: str | None, name: str, default: dt.datetime) -> dt.datetime:
    if value is None:
        return default
    try:
        at = dt.datetime.fromisoformat(value)
    except ValueError:
        raise RequestError(f"{name} must be an ISO 8601 date or time (2026-12-01, 2026-12-01T09:00:00Z).",
                           param=name) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)


async def audit_answer(request: Request, caller: Caller) -> Response:
    if not caller.admin:
        raise RequestError("Only an organization's admins read its audit log.", status=403)
    query = request.query_params
    unknown = sorted(set(query) - {"from", "to", "limit"})
    if unknown:
        raise RequestError(f"Unknown parameter {unknown[0]!r}.", param=unknown[0])
    now = dt.datetime.now(dt.UTC)
    end = _instant(query.get("to"), "to", now)
    start = _instant(query.get("from"), "from", end - dt.timedelta(days=DEFAULT_DAYS))
    if start > end:
        raise RequestError("from must not be after to.", param="from")
    if (end - start).days > audit.DAYS_MAX:
        raise RequestError(f"from and to may be at most {audit.DAYS_MAX} days apart.", param="from")
    raw_limit = query.get("limit", "100")
    if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= LIMIT_MAX:
        raise RequestError(f"limit must be a whole number from 1 to {LIMIT_MAX:,}.", param="limit")
    entries = await audit.read(caller.org.id, start.astimezone(dt.UTC).date(), end.astimezone(dt.UTC).date(),
                               LIMIT_MAX * 2)
    lo, hi = start.astimezone(dt.UTC), end.astimezone(dt.UTC)
    kept = [e for e in entries if lo <= dt.datetime.fromisoformat(e["at"]) <= hi]
    return json_response({"data": kept[:int(raw_limit)]})
