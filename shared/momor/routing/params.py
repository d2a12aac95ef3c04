"""Parameter filtering: only the parameters an offering honours reach it (seed 000)."""

from __future__ import annotations

from ..call import Parameters
from .plan import Candidate

# Parameter attribute name -> the native name the catalog lists in `parameters`.
_NATIVE_NAMES = {name: (f.alias or name) for name, f in Parameters.model_fields.items()}


def params_for(params: Parameters, candidate: Candidate) -> Parameters:
    """Only the parameters this provider honours reach it; the rest are left off (seed 000)."""
    honoured = candidate.provider.parameters
    # Every field defaults to None, so a set one is among the fields set: no model_dump per call.
    dropped = [k for k in params.model_fields_set
               if _NATIVE_NAMES[k] not in honoured and getattr(params, k) is not None]
    unchecked = params.unchecked
    if unchecked and not unchecked.keys() <= set(honoured):
        kept = params.with_unchecked({k: v for k, v in unchecked.items() if k in honoured})
        return kept.model_copy(update=dict.fromkeys(dropped)) if dropped else kept
    if not dropped:
        return params
    return params.model_copy(update=dict.fromkeys(dropped))
