"""The seeds' precedence between a call's own `provider`/`prioritization` fields and its organization's
defaults, in one function (seed 000 and 001):

    deprecated  the call's own value; left out, the organization's default; else false
    maxAge      the call's own value; left out, the organization's default; else no model is left out
                for its age (the catalog's cutoff applies, as before)
    zdr         true when the call asks for it OR the organization holds every call to it: where the
                organization holds it, `zdr: false` does not turn it off

Applied once a call is read and its caller known (api/flow.py), before planning, so the defaults
act exactly where the call's own fields do: the planner's age and deprecation rules, the router's
families, the key resolver's zdr gate. The record keeps the selectors as the caller wrote them.
"""

from __future__ import annotations

import dataclasses

from ..store.organizations import Defaults
from .selectors import Prioritization, parse_duration


def with_org_defaults(prio: Prioritization, defaults: Defaults, where: str = "prioritization") -> Prioritization:
    """The prioritization a call is planned with: its own, with what it left out taken from its organization."""
    deprecated = prio.deprecated if prio.deprecated is not None else defaults.deprecated
    max_age = prio.max_age
    if max_age is None and defaults.max_age is not None:
        max_age = parse_duration(defaults.max_age, f"your organization's default {where}.maxAge")
    zdr = prio.zdr or defaults.zdr
    if (deprecated, max_age, zdr) == (prio.deprecated, prio.max_age, prio.zdr):
        return prio
    return dataclasses.replace(prio, deprecated=deprecated, max_age=max_age, zdr=zdr)
