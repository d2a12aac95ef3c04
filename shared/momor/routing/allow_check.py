"""An allow-list as the key API is given it, checked against the catalog (issue 38): every entry of
`allow.models` must read as a selector (`name`, `publisher/name`, `publisher/*`, `tier/X`, `*`) and
name something the catalog has, and every entry of `allow.providers` a provider it serves; else a 400
naming the entry; so must every name `budgets.byModel` and `budgets.byProvider` give a budget.
(A stored list is read leniently at call time, selectors.allowed: a model the catalog
later drops is simply matched by nothing.)"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..errors import RequestError, RoutingError
from .selectors import parse_selector


def check_allow(values: dict[str, Any], catalog: Catalog) -> None:
    """`values`: the key API's fields by name (store/key_limits.py); only the allow-lists are read."""
    for i, entry in enumerate(values.get("allow.models") or ()):
        where = f"allow.models[{i}]"
        try:
            selector = parse_selector(entry, where)
        except RoutingError as exc:
            raise RequestError(exc.detail, param=where) from None
        models = catalog.models
        if selector.name is not None and not any(m.name.lower() == selector.name.lower() for m in models):
            raise RequestError(f"{where}: {entry!r} names no model in the catalog.", param=where)
        if selector.publisher is not None and not any(
                m.publisher.lower() == selector.publisher.lower() for m in models):
            raise RequestError(f"{where}: {entry!r} names no publisher in the catalog.", param=where)
    for name in values.get("budgets.byModel") or {}:
        if not any(m.name.lower() == name.lower() for m in catalog.models):
            where = f"budgets.byModel.{name}"
            raise RequestError(f"{where}: {name!r} names no model in the catalog.", param=where)
    for name in values.get("budgets.byProvider") or {}:
        if not catalog.knows_provider(name):
            where = f"budgets.byProvider.{name}"
            raise RequestError(f"{where}: {name!r} is not a provider this deployment serves.", param=where)
    for i, entry in enumerate(values.get("allow.providers") or ()):
        if not catalog.knows_provider(entry):
            where = f"allow.providers[{i}]"
            raise RequestError(f"{where}: {entry!r} is not a provider this deployment serves.", param=where)
