"""Where a wire request goes and how its key travels, from catalog options and the key's own values.

Most providers take `POST {baseUrl}/chat/completions` with `Authorization: Bearer <key>`. Some put
the model or deployment in the path, want a query parameter, take the key in another header, or
live at an address that differs per customer (Azure: `https://{resource}.openai.azure.com/openai/
deployments/{deployment}/chat/completions?api-version=...` with an `api-key` header). Those
differences are catalog provider options, read here, never a branch on a provider's name:

- `authHeader`: the header that carries the key as it is (`"api-key"`); left out,
  `Authorization: Bearer <key>`. No key (a local server), no header.
- `path`: the path below `baseUrl`, a template; left out, the wire's own (`/chat/completions`).
- `query`: query parameters, each value a template (`{"api-version": "{apiVersion}"}`).
- `values`: default values for the templates (`{"apiVersion": "2024-10-21"}`).

A template's `{name}` is filled from, first to last: the key's own values (the fields of a key
object beside `key`, saved in the keys secret or sent with the call, seed 000 "an object holding key
and the values the provider needs"), the option `values`, then `model` and `deployment`, both the
offering's id. `baseUrl` may hold templates too (`https://{resource}.openai.azure.com`).

A value lands in a host name or a path segment, and a caller may send it with their own key: it must
be a plain token (letters, digits, `.`, `_`, `~`, `-`), so no value can point a request at another
host or path. A missing or unsafe value fails that offering with a message that names the value,
never its content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ..errors import ProviderError
from .base import Target

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,199}$")


@dataclass(slots=True, frozen=True)
class Endpoint:
    url: str | None
    """The absolute URL when `baseUrl` is a template; else None and the base URL is used as written."""
    path: str
    """The path below the base URL, query string included."""
    headers: dict[str, str]


def endpoint(target: Target, default_path: str, *, path_template: str | None = None) -> Endpoint:
    """`path_template`: the path to use instead of the `path` option's (an operation other than chat
    names its own: `embeddingsPath`, `rerankPath`), the wire's default when it gives none."""
    options = target.provider.options
    values = _values(target)
    if path_template is None:
        path_template = options.get("path") if isinstance(options.get("path"), str) else default_path
    path = _fill(path_template, values, target)
    query = options.get("query")
    if isinstance(query, dict) and query:
        pairs = [f"{quote(str(k), safe='')}={quote(_fill(str(v), values, target), safe='')}" for k, v in query.items()]
        path += ("&" if "?" in path else "?") + "&".join(pairs)
    url = None
    base = target.provider.base_url
    if _PLACEHOLDER.search(base):
        url = _fill(base, values, target).rstrip("/") + path
    return Endpoint(url=url, path=path, headers=auth_headers(target))


def auth_headers(target: Target) -> dict[str, str]:
    if not target.api_key:
        return {}  # a local server (Ollama, vLLM) may run without a key; an empty Bearer is refused by some
    header = target.provider.options.get("authHeader")
    if isinstance(header, str) and header and header.lower() != "authorization":
        return {header: target.api_key}
    return {"Authorization": f"Bearer {target.api_key}"}


def _values(target: Target) -> dict[str, Any]:
    defaults = target.provider.options.get("values")
    values: dict[str, Any] = {"model": target.model_id, "deployment": target.model_id}
    if isinstance(defaults, dict):
        values.update(defaults)
    values.update(target.key_extra)
    return values


def _fill(template: str, values: dict[str, Any], target: Target) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        value = values.get(name)
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ProviderError(
                f"{target.provider.name} needs a value for {name!r}: put it in the provider's key object "
                "or in the catalog's options.values.",
                kind="unsupported",
            )
        text = str(value)
        if not _SAFE_VALUE.match(text):
            raise ProviderError(
                f"{target.provider.name}: the value for {name!r} must be letters, digits, '.', '_', '~' or '-'.",
                kind="unsupported",
            )
        return text

    return _PLACEHOLDER.sub(one, template)
