"""Invoke one built function locally, without Docker: `python -m tests.lambda.invoke FUNCTION METHOD PATH`.

`sam local invoke` and `sam local start-api` run functions in Docker; this runs what `sam build`
made under SAM CLI's bundled Runtime Interface Emulator on this host (tests/lambda/rie.py), with the
template's own environment, against local stand-ins for what the stack deploys: DynamoDB Local and
moto_server (tables, catalog bucket, keys secret), the fake providers (tests/fakes) the example
catalog is pointed at, and a Momor API key made for the run. One API Gateway event goes in (REST
API shape, as deployed); the status, headers and body come out.

    python -m tests.lambda.invoke ModelsFunction POST /models \\
        --body '{"systemPrompt": "", "messages": [{"type": "user", "value": "Hi"}], "streaming": true}'
    python -m tests.lambda.invoke CatalogFunction GET /v1/models

A streaming function (ModelsFunction, ChatCompletionsFunction, MessagesFunction) runs as its exec
wrapper starts it on Lambda, through the streaming bridge; the emulator hands the streamed reply
back whole. `--catalog FILE` and `--keys FILE` (saved provider keys, JSON) serve real providers.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from infra.emulators import Emulators, provision
from momor.store import apikeys

from . import rie

STREAMING = ("ModelsFunction", "ChatCompletionsFunction", "MessagesFunction")


def _catalog(path: str | None, fake_url: str) -> Path:
    source = Path(path) if path else rie.ROOT / "infra" / "example-catalog.json"
    catalog = json.loads(source.read_text())
    if not path:  # the example catalog names the fake providers' default port
        for provider in catalog["providers"]:
            provider["baseUrl"] = provider["baseUrl"].replace("http://127.0.0.1:8788", fake_url)
    out = Path(tempfile.mkdtemp(prefix="momor-invoke-")) / "catalog.json"
    out.write_text(json.dumps(catalog))
    return out


def _api_key(endpoints: Any, table: str) -> str:
    plaintext = apikeys.KEY_PREFIX + uuid.uuid4().hex
    endpoints.client("dynamodb").put_item(TableName=table, Item={
        "keyHash": {"S": apikeys.key_hash(plaintext)}, "id": {"S": "local-invoke"}, "name": {"S": "local invoke"},
        "created": {"S": "2026-01-01T00:00:00+00:00"}, "disabled": {"BOOL": False}, "zdr": {"BOOL": False},
    })
    return plaintext


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("function", help="a function's logical id in template.yaml, e.g. ModelsFunction")
    parser.add_argument("method")
    parser.add_argument("path")
    parser.add_argument("--body", help="the request body (JSON text)")
    parser.add_argument("-H", "--header", action="append", default=[], help="'Name: value' (repeatable)")
    parser.add_argument("--catalog", help="a catalog file (default: the example, pointed at the fakes)")
    parser.add_argument("--keys", help="a JSON file of saved provider keys")
    args = parser.parse_args(argv)
    from tests.fakes import FakeProviders

    build = rie.sam_build()
    # The fakes take any key; infra/example-keys.json is what infra/dev.sh saves for them.
    keys_file = args.keys or (None if args.catalog else rie.ROOT / "infra" / "example-keys.json")
    keys = json.loads(Path(keys_file).read_text()) if keys_file else None
    with Emulators() as endpoints, FakeProviders() as fake:
        names = provision(endpoints, catalog_file=_catalog(args.catalog, fake.url), keys=keys)
        key = _api_key(endpoints, names["MOMOR_API_KEYS_TABLE"])
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
        headers.update(dict(h.split(":", 1) for h in args.header))
        headers = {k.strip(): v.strip() for k, v in headers.items()}
        env = rie.function_env(args.function) | endpoints.env() | names
        streaming = args.function in STREAMING
        with rie.LambdaFunction.from_build(build, args.function, env, streaming=streaming) as fn:
            event = rie.api_event("rest", args.method, args.path, headers=headers,
                                  body=json.loads(args.body) if args.body else None)
            answer = fn.invoke(event)
    print(answer.status)
    for name, value in answer.headers.items():
        print(f"{name}: {value}")
    print()
    print(answer.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
