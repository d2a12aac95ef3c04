"""Run Momor locally: every route in one process, with its AWS pieces and a fake provider beside it.

    python -m infra.local --catalog infra/example-catalog.json --port 8080 --api-key dev-key

- Unless AWS_ENDPOINT_URL (or the per-service AWS_ENDPOINT_URL_*) is set, starts DynamoDB Local and
  moto_server itself (infra/emulators.py) and creates the tables, catalog bucket and keys secret.
- Unless --no-fake-providers, starts the bundled fake provider (tests/fakes) on --fake-port, which
  speaks the OpenAI and Anthropic wires; the example catalog points there, and its saved keys
  (infra/example-keys.json) are fake. With real keys and a catalog of real base URLs, the same
  command serves real providers.
- Accepts the --api-key given (besides any key in the API-keys table).
- Unless MOMOR_COGNITO_USER_POOL_ID names a pool already, makes one on moto's Cognito (the same
  moto_server) with the console's app client, a dev organization and its admin, the dev person
  (--dev-email, --dev-password), and prints how to sign in (infra/cognito_dev.py).
- --host beyond loopback prints a warning first (`exposure_warning`): moto's Cognito signs tokens
  with a key published in the moto package, so anyone who reaches the server can forge a sign-in.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_KEYS = ROOT / "infra" / "example-keys.json"
DEFAULT_FAKE_PORT = 8788


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve every Momor route locally.")
    parser.add_argument("--catalog", default=str(ROOT / "infra" / "example-catalog.json"), help="catalog file")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--api-key", default="dev-key", help="a Momor API key to accept")
    parser.add_argument("--keys", default=str(EXAMPLE_KEYS), help="saved provider keys (JSON) for the secret")
    parser.add_argument("--fake-port", type=int, default=DEFAULT_FAKE_PORT, help="port of the bundled fake provider")
    parser.add_argument("--no-fake-providers", action="store_true", help="do not start the fake provider")
    parser.add_argument("--dev-email", default=None, help="the dev person's sign-in (default dev@momor.local)")
    parser.add_argument("--dev-password", default=None, help="the dev person's password (default Momor-dev-1)")
    return parser.parse_args(argv)


def exposure_warning(host: str, *, moto_cognito: bool) -> str | None:
    """What to say before serving on `host` beyond this machine (None for a loopback address): the
    dev setup trusts what anyone there could forge."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may well resolve beyond loopback
        loopback = False
    if loopback:
        return None
    lines = [f"WARNING: --host {host} serves Momor beyond this machine, and this is a development setup:"]
    if moto_cognito:
        lines.append("  moto's Cognito signs sign-in tokens with a private key published inside the moto package, "
                     "so anyone who can reach this server can forge a sign-in as any person, the dev admin "
                     "and operators included.")
    lines.append("  The API key printed below is an operator's key of the whole deployment.")
    lines.append("  Serve on 127.0.0.1 (the default) unless every machine that can reach this one is trusted.")
    return "\n".join(lines)


def _endpoint_given() -> bool:
    return any(k.startswith("AWS_ENDPOINT_URL") for k in os.environ)


@contextlib.contextmanager
def _aws(args: argparse.Namespace) -> Iterator[str]:
    """Emulators (unless endpoints are given) with the tables, bucket and secret created; yields
    moto_server's URL (where the user pool is made)."""
    from infra.emulators import Emulators, Endpoints, provision

    raw_keys = Path(args.keys).read_text()
    from momor.store.keys import KeysError, check_saved_keys

    try:  # a bad entry (a weight of 0) stops the start, named, rather than failing every call
        check_saved_keys(args.keys, raw_keys)
    except KeysError as exc:
        raise SystemExit(str(exc)) from None
    keys = json.loads(raw_keys)
    if _endpoint_given():
        base = os.environ.get("AWS_ENDPOINT_URL", "")
        endpoints = Endpoints(
            dynamodb=os.environ.get("AWS_ENDPOINT_URL_DYNAMODB", base),
            moto=os.environ.get("AWS_ENDPOINT_URL_S3", base),
        )
        os.environ.update({k: v for k, v in provision(endpoints, keys=keys).items()})
        yield os.environ.get("AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER", endpoints.moto)
        return
    with Emulators() as endpoints:
        os.environ.update(endpoints.env())
        os.environ.update(provision(endpoints, keys=keys))
        yield endpoints.moto


@contextlib.contextmanager
def _fake_providers(port: int) -> Iterator[None]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes", "--port", str(port)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the fake provider did not start on port {port}") from None
                time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def _catalog_for(args: argparse.Namespace) -> str:
    """The catalog file to serve. The example catalog points at the fake provider on its default
    port; on another --fake-port, a copy pointing there is served instead."""
    path = Path(args.catalog).resolve()
    default = f"http://127.0.0.1:{DEFAULT_FAKE_PORT}/"
    text = path.read_text()
    if args.no_fake_providers or args.fake_port == DEFAULT_FAKE_PORT or default not in text:
        return str(path)
    moved = Path(tempfile.mkdtemp(prefix="momor-local-")) / path.name
    moved.write_text(text.replace(default, f"http://127.0.0.1:{args.fake_port}/"))
    return str(moved)


def _sign_in(args: argparse.Namespace, moto: str) -> str:
    """The user pool and dev person (unless a pool is configured already); how to sign in, to print."""
    from infra import cognito_dev

    console = f"http://{args.host}:{args.port}/console"
    if os.environ.get("MOMOR_COGNITO_USER_POOL_ID"):
        return f"Console: {console} (the user pool {os.environ['MOMOR_COGNITO_USER_POOL_ID']}, or the API key)"
    email = args.dev_email or cognito_dev.DEV_EMAIL
    password = args.dev_password or cognito_dev.DEV_PASSWORD
    from momor.config import reset_config

    pool = cognito_dev.provision_dev(moto, email=email, password=password)
    os.environ.update(pool.env())
    reset_config()  # making the organization read the settings before the pool's were set
    return (f"Console: {console}\n"
            f"  sign in as {email} with the password {password} (admin of {cognito_dev.DEV_ORG_NAME!r}),\n"
            f"  or with the API key {args.api_key}\n"
            f"  user pool {pool.id} on {moto} (moto's Cognito), app client {pool.client_id}")


def _best(fast: str, fallback: str) -> str:
    """`fast` when its package is installed (the `local` extra has it), else uvicorn's pure-Python one."""
    import importlib.util

    return fast if importlib.util.find_spec(fast) is not None else fallback


def with_openapi(app: Any) -> Any:
    """`app` with `GET /openapi.json`: the native routes' OpenAPI document, as the docs site
    publishes it (infra/docs_reference.py builds both from the code). Local only: a deployed
    function builds no schema on a request no caller makes (app.py)."""
    from starlette.responses import JSONResponse

    from infra.docs_reference import openapi

    document = openapi()

    async def serve(request: Any) -> JSONResponse:
        return JSONResponse(document)

    app.add_route("/openapi.json", serve, methods=["GET"])
    return app


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    sys.path.insert(0, str(ROOT))
    with contextlib.ExitStack() as stack:
        moto = stack.enter_context(_aws(args))
        # The catalog is read from the file (re-read when it changes), not the bucket.
        os.environ.pop("MOMOR_CATALOG_BUCKET", None)
        os.environ.pop("MOMOR_CATALOG_KEY", None)
        os.environ["MOMOR_CATALOG_FILE"] = _catalog_for(args)
        if not args.no_fake_providers:
            stack.enter_context(_fake_providers(args.fake_port))

        import uvicorn

        from momor.app import all_routes
        from momor.store import apikeys

        sign_in = _sign_in(args, moto)
        # Tokens are checked against moto's key set: the pool _sign_in made, or one given on moto.
        moto_cognito = os.environ.get("MOMOR_COGNITO_JWKS_URL", "").startswith(moto)
        warning = exposure_warning(args.host, moto_cognito=moto_cognito)
        if warning:
            print(warning, file=sys.stderr, flush=True)
        apikeys.accept_local_key(args.api_key, name="local", admin=True)  # the operator sees every key
        print(f"Momor is serving on http://{args.host}:{args.port} (API key: {args.api_key})", flush=True)
        print(sign_in, flush=True)
        # uvloop and httptools (the `local` extra): about a third of a streamed token's cost through
        # the server is the event loop and HTTP framing; asyncio + h11 are the fallback when absent.
        uvicorn.run(with_openapi(all_routes()), host=args.host, port=args.port, log_level="info", lifespan="off",
                    loop=_best("uvloop", "asyncio"), http=_best("httptools", "h11"))


if __name__ == "__main__":
    main()
