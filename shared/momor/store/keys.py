"""Provider keys: the deployment's saved keys, and keys a caller sends with one call.

Saved keys live in ONE Secrets Manager secret (MOMOR_KEYS_SECRET) whose SecretString is JSON:

    {"openai": "sk-...",
     "azure":    {"key": "...", "zdr": true, "apiVersion": "2025-01-01"},
     "azure@eu": {"key": "...", "zdr": true}}

An entry's value may also be a list of such objects, several keys for one provider (a `KeyPool`):

    {"openai": [{"key": "...", "label": "east", "weight": 3, "rpm": 500, "tpm": 200000},
                {"key": "...", "label": "west", "weight": 1}]}

each with a `label` (the name records give it; default its place, "1", "2", ...), a `weight` (a
positive number, default 1) and the per-minute quota its provider gave it (`rpm` requests, `tpm`
tokens; absent: none). routing/key_spread.py spreads calls over them. A pooled key may also say where
it is sent, an Azure resource's `baseUrl`, a Bedrock `region`, its `deployments` (store/key_places.py).

An entry is a provider's name (`azure@eu`) or root (`azure`); a lookup tries the exact name,
then the root. `zdr` marks a key covered by a zero-data-retention agreement; every other
value is handed to the provider's wire as `extra`. The secret is fetched at most once per
MOMOR_KEYS_TTL seconds per process and parsed once per fetch. Past that, the fetch runs on a thread of
its own while the keys already read serve (last_good.py: a call waits for it at most
MOMOR_STORE_READ_WAIT_S, not at all while Secrets Manager is known to be failing, and the last good keys
serve for at most MOMOR_STORE_MAX_STALE_S); with none read yet, an unreachable Secrets Manager is a 503.

A call's own keys (seed 000 `keys`) take the same shape and the same name-then-root rule, but
are never zdr: seed 000 runs zdr calls "never on keys sent with the call".

A key string never appears in repr(), str(), logs or error messages: errors name the entry.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..config import get_config
from ..errors import MomorError, RequestError
from . import aws
from .key_places import PLACE_FIELDS, Place, parse_place
from .last_good import LastGoodValue

KeySource = Literal["call", "saved"]


@dataclass(frozen=True, slots=True)
class ProviderKey:
    key: str
    zdr: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Other values the provider needs (api version, account id, ...)."""
    source: KeySource = "saved"
    entry: str = ""
    """The entry that matched: the provider's full name or its root."""
    label: str = ""
    """Within a KeyPool: the key's name on records and circuits (never its value); else empty."""
    weight: float = 1.0
    rpm: int | None = None
    """Within a KeyPool: requests per minute its provider allows it (None: no quota)."""
    tpm: int | None = None
    """Within a KeyPool: tokens per minute its provider allows it (None: no quota)."""
    place: Place | None = None
    """Within a KeyPool: its own endpoint, region or deployments (store/key_places.py); None: the catalog's."""

    def __repr__(self) -> str:
        # extra may hold secrets too (a second credential), so only its names are shown.
        return (
            f"ProviderKey(entry={self.entry!r}, label={self.label!r}, source={self.source!r}, zdr={self.zdr}, "
            f"key=<hidden>, extra={sorted(self.extra)})"
        )

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class KeyPool:
    """Several saved keys for one entry (a list in the secret); ProviderKey's repr hides each value."""

    entry: str
    keys: tuple[ProviderKey, ...]

POOL_FIELDS = ("label", "weight", "rpm", "tpm", *PLACE_FIELDS)
"""A pooled key's own settings: never handed to the provider's wire as `extra`."""


class KeysError(MomorError):
    """The saved-keys secret cannot be read or is malformed (a deployment fault)."""

    status = 500


def _candidates(provider_name: str) -> tuple[str, ...]:
    root = provider_name.split("@", 1)[0]
    return (provider_name,) if root == provider_name else (provider_name, root)


def _parse_entry(entry: str, value: Any, source: KeySource) -> ProviderKey:
    """One entry of either shape; raises ValueError naming what is wrong, never the value."""
    if isinstance(value, str):
        if not value:
            raise ValueError("the key is empty")
        _header_safe(value)
        return ProviderKey(key=value, source=source, entry=entry)
    if not isinstance(value, Mapping):
        raise ValueError("must be a string or an object holding key")
    key = value.get("key")
    if not isinstance(key, str) or not key:
        raise ValueError("key must be a non-empty string")
    _header_safe(key)
    zdr = value.get("zdr", False)
    if not isinstance(zdr, bool):
        raise ValueError("zdr must be true or false")
    extra = {k: v for k, v in value.items() if k not in ("key", "zdr", *POOL_FIELDS)}
    # A caller cannot vouch for zdr: their key's retention terms are not Momor's agreements.
    return ProviderKey(key=key, zdr=zdr and source == "saved", extra=extra, source=source, entry=entry)


def _header_safe(key: str) -> None:
    # A key travels in an HTTP header, which takes printable ASCII only (a fuzzer's "\x80" crashed the send).
    if not (key.isascii() and key.isprintable()):
        raise ValueError("the key must be printable ASCII")


def call_key(keys: Mapping[str, Any] | None, provider_name: str) -> ProviderKey | None:
    """The caller's own key for `provider_name` from the call's `keys` object, if they sent one."""
    if not keys:
        return None
    for entry in _candidates(provider_name):
        if entry in keys:
            try:
                return _parse_entry(entry, keys[entry], "call")
            except ValueError as exc:
                raise RequestError(f"keys.{entry}: {exc}", param=f"keys.{entry}") from None
    return None


# --- saved keys -------------------------------------------------------------------------------
# A small cache of our own rather than Powertools' get_secret: we keep the *parsed* keys with
# their expiry (last_good.LastGoodValue), so a fresh lookup is one dict read, and async code can tell
# whether it needs a thread without reaching into Powertools' private cache keys.


class KeysUnavailable(KeysError):
    """Secrets Manager did not answer and no keys were read before: a 503, not a deployment fault."""

    status = 503


Saved = tuple[str, dict[str, "ProviderKey | KeyPool"]]
"""What one read of the secret gives: its id and its keys by entry."""


def _read(previous: Saved | None) -> Saved:
    secret_id = get_config().need("keys_secret")
    return secret_id, _parse_secret(secret_id, _fetch(secret_id))


def _unavailable(exc: BaseException) -> Exception:
    return KeysUnavailable(f"the saved provider keys cannot be read: {exc}")


_saved: LastGoodValue[Saved] | None = None
"""Made by the first `saved_keys` (not at import: a function that never reads the keys, the catalog's,
never reaches their fetch, tests/lambda/aws_usage.py's reading of what each function may call)."""
_lock = threading.Lock()


def _values() -> LastGoodValue[Saved]:
    global _saved
    with _lock:
        if _saved is None:
            _saved = LastGoodValue("Secrets Manager", "saved provider keys", _read,
                                   ttl=lambda: get_config().keys_ttl, unavailable=_unavailable)
        return _saved


def _fresh() -> dict[str, ProviderKey | KeyPool] | None:
    saved = _saved
    kept = saved.peek() if saved is not None else None
    if kept is not None and saved.is_fresh() and kept[0] == get_config().keys_secret:  # type: ignore[union-attr]
        return kept[1]
    return None


def cached_keys() -> dict[str, ProviderKey | KeyPool] | None:
    """The keys last read, fresh or not (None: none read yet); never fetches."""
    kept = _saved.peek() if _saved is not None else None
    return kept[1] if kept is not None else None


def saved_keys() -> dict[str, ProviderKey | KeyPool]:
    """Every saved key by entry; Secrets Manager is asked at most once per MOMOR_KEYS_TTL (module docstring)."""
    keys = _fresh()
    if keys is not None:
        return keys
    values = _values()
    secret_id, keys = values.get()
    if secret_id != get_config().keys_secret:  # the setting changed (tests): the old secret's keys are not these
        with _lock:
            if (kept := values.peek()) is not None and kept[0] != get_config().keys_secret:
                values.clear()
        secret_id, keys = values.get()
    return keys


def expire_saved_keys() -> None:
    """Fetch the keys again before they serve as fresh (a SnapStart restore); they stand in meanwhile."""
    if _saved is not None:
        _saved.expire()


def refresh_in_background() -> threading.Event:
    """Start fetching the keys read before again now; the event is set when it ends (at once when none
    were read: the first call reads them)."""
    if _saved is None:
        done = threading.Event()
        done.set()
        return done
    return _saved.refresh_in_background()


def _fetch(secret_id: str) -> str:
    # One signed POST (aws.lean_client), not a boto3 client: no service model to load on a cold start.
    try:
        answer = aws.lean_client("secretsmanager").get_secret_value(SecretId=secret_id)
    except aws.AwsError as exc:
        # The error code and message name the secret and the reason, never its value.
        if exc.status == 0 or exc.status == 429 or exc.status >= 500:  # down, slow or throttled: a 503
            raise KeysUnavailable(f"cannot reach Secrets Manager for {secret_id}: {exc}") from None
        raise KeysError(f"cannot read the saved keys secret {secret_id}: {exc}") from None
    if "SecretString" not in answer:
        raise KeysError(f"saved keys secret {secret_id} must be a SecretString")
    return answer["SecretString"]


def _parse_secret(secret_id: str, raw: str) -> dict[str, ProviderKey | KeyPool]:
    document, problem = _load_json(raw)
    if problem:
        raise KeysError(f"saved keys secret {secret_id} is not JSON ({problem})")
    if not isinstance(document, dict):
        raise KeysError(f"saved keys secret {secret_id} must be a JSON object of provider names")
    keys: dict[str, ProviderKey | KeyPool] = {}
    for entry, value in document.items():
        try:
            if isinstance(value, list):
                keys[entry] = _parse_pool(entry, value)
            else:
                _no_place(value)
                keys[entry] = _parse_entry(entry, value, "saved")
        except ValueError as exc:
            raise KeysError(f"saved keys secret {secret_id}, entry {entry!r}: {exc}") from None
    return keys


def _parse_pool(entry: str, values: list[Any]) -> KeyPool:
    """A list of keys for one entry; ValueError names the key (by place) and the field at fault."""
    if not values:
        raise ValueError("a list of keys must hold at least one")
    pooled: list[ProviderKey] = []
    for number, value in enumerate(values, 1):
        where = f"key {number}"
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: must be an object holding key")
        try:
            key = _parse_entry(entry, value, "saved")
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        label = value.get("label", str(number))
        if not isinstance(label, str) or not label or not (label.isascii() and label.isprintable()):
            raise ValueError(f"{where}: label must be a non-empty printable string")
        if any(p.label == label for p in pooled):
            raise ValueError(f"{where}: label {label!r} is used twice")
        weight = value.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < float("inf"):
            raise ValueError(f"{where} ({label}): weight must be a positive number")
        quota = {}
        for name in ("rpm", "tpm"):
            limit = value.get(name)
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
                raise ValueError(f"{where} ({label}): {name} must be a positive whole number")
            quota[name] = limit
        try:
            place = parse_place(value)
        except ValueError as exc:
            raise ValueError(f"{where} ({label}): {exc}") from None
        pooled.append(dataclasses.replace(key, label=label, weight=float(weight), place=place, **quota))
    return KeyPool(entry, tuple(pooled))


def _no_place(value: Any) -> None:
    # One key for a provider is resolved as before, on the catalog's endpoint: a place written on it
    # would be silently ignored, so it is refused, pointing at the list that takes it.
    if isinstance(value, Mapping):
        for name in PLACE_FIELDS:
            if name in value:
                raise ValueError(f"{name} is taken on a key in a list: write the entry as a list of one")


def check_saved_keys(name: str, raw: str) -> None:
    """Raises KeysError naming what is wrong with a saved-keys document (a `--keys FILE`) before it
    is put in the secret, so a bad entry stops a start rather than each call."""
    _parse_secret(name, raw)


def _load_json(raw: str) -> tuple[Any, str | None]:
    """The document, or where it stops being JSON. The decode error is not raised on: its `.doc`
    is the whole secret, and a chained exception would carry it into any traceback."""
    try:
        return json.loads(raw), None
    except json.JSONDecodeError as exc:
        return None, f"line {exc.lineno} column {exc.colno}"


def saved_key(provider_name: str) -> ProviderKey | KeyPool | None:
    """The deployment's key for `provider_name` (exact name, then root), or None."""
    return key_in(saved_keys(), provider_name)


def key_in(keys: Mapping[str, ProviderKey | KeyPool], provider_name: str) -> ProviderKey | KeyPool | None:
    """`provider_name`'s key among `keys` (exact name, then root): a lookup in a set of saved keys
    already in hand, which never fetches (the attempt loop's resolver runs on the event loop)."""
    for entry in _candidates(provider_name):
        if entry in keys:
            return keys[entry]
    return None


async def saved_keys_async() -> dict[str, ProviderKey | KeyPool]:
    """`saved_keys` from async code: from memory while fresh (no thread hop), else on a thread."""
    keys = _fresh()
    return keys if keys is not None else await aws.in_thread(saved_keys)


def reset_saved_keys() -> None:
    """For tests: drop the cached keys."""
    if _saved is not None:
        _saved.clear()
