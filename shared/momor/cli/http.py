"""The `momor` commands' one HTTP client: the key API and GET /audit of a running Momor, as an admin's
or operator's API key sees them.

    client = http.from_args(args)             # --url/--api-key, else MOMOR_URL/MOMOR_API_KEY
    key = client.request("PATCH", f"/keys/{id}", {"limits": {...}})

A refusal (any status from 400 up) stops the command with the API's own message (its problem
document's `detail`) on stderr and exit status 1: the CLI checks no value itself where the API
does, so what it says about a bad limit is what the console would say. The API key travels only
in the Authorization header: it is never part of a message printed here.
"""

from __future__ import annotations

import argparse
from typing import Any

TIMEOUT_S = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=argparse.SUPPRESS,
                        help="Momor's base URL (default: $MOMOR_URL), e.g. https://xxxx.execute-api.eu-west-1.amazonaws.com")
    parser.add_argument("--api-key", default=argparse.SUPPRESS,
                        help="an admin's or operator's API key (default: $MOMOR_API_KEY; prefer the variable: "
                             "a flag is visible to other users of the machine)")


class Client:
    def __init__(self, url: str, api_key: str) -> None:
        self.url = url.rstrip("/")
        self._api_key = api_key

    def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> Any:
        """The answer's JSON; a refusal or an unreachable server stops the command (SystemExit, message)."""
        import httpx2  # here, not at import: the store-side commands never need it

        params = {k: v for k, v in (query or {}).items() if v is not None}
        try:
            answer = httpx2.request(method, self.url + path, json=body, params=params, timeout=TIMEOUT_S,
                                    headers={"Authorization": f"Bearer {self._api_key}"})
        except httpx2.HTTPError as exc:
            raise SystemExit(f"momor: {self.url} did not answer: {type(exc).__name__}: {exc}") from None
        if answer.status_code >= 400:
            raise SystemExit(f"momor: {_detail(answer)} (HTTP {answer.status_code})")
        return answer.json() if answer.content else None


def _detail(answer: Any) -> str:
    """The problem document's `detail` (the key API's shape), else the first of the body."""
    try:
        body = answer.json()
    except ValueError:
        return answer.text[:300] or answer.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        detail = body.get("detail") or (error.get("message") if isinstance(error, dict) else error)
        if isinstance(detail, str):
            return detail
    return str(body)[:300]


def from_args(args: argparse.Namespace) -> Client:
    from ..config import get_config

    url = getattr(args, "url", None) or get_config().cli_url
    key = getattr(args, "api_key", None) or get_config().cli_api_key
    if not url:
        raise SystemExit("momor: give Momor's URL: MOMOR_URL or --url")
    if not key:
        raise SystemExit("momor: give an admin's API key: MOMOR_API_KEY or --api-key "
                         "(no key yet? `momor keys create NAME --bootstrap` makes the first one)")
    return Client(url, key)
