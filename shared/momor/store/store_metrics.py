"""Counts of what the stores' failures did (writes deferred, spilled, replayed, lost), as EMF metrics.

One EMF document per count, dimension `store` (records, memory, budgets, ...), in the namespace
metrics.py uses; written where the log lines go, on Lambda or with MOMOR_METRICS=1, like the call
metrics. Kept apart from metrics.py, which imports the records module, so the store can count
without importing upward.
"""

from __future__ import annotations

import json
import os
import time

from ..config import get_config
from ..logs import write_line


def count(name: str, store: str, value: int = 1) -> None:
    """One count of `name` for `store`; never raises (a metric must not fail the bookkeeping)."""
    try:
        if not (os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or get_config().metrics):
            return
        if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() == "true":
            return
        namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Momor")
        write_line(json.dumps({
            "_aws": {"Timestamp": int(time.time() * 1000), "CloudWatchMetrics": [
                {"Namespace": namespace, "Dimensions": [["service", "store"]],
                 "Metrics": [{"Name": name, "Unit": "Count"}]}]},
            "service": "momor", "store": store, name: value}, separators=(",", ":")))
    except Exception:  # see the docstring
        pass
