"""Fixtures for the Lambda tests: realistic API Gateway events, a Runtime API stand-in, bridge processes.

The event shapes follow `sam local generate-event apigateway aws-proxy` (REST API, payload v1) and
`... http-api-proxy` (HTTP API, payload v2) from SAM CLI 1.170, with the sample values trimmed and
the parts a test varies (method, path, query, headers, cookies, body) made parameters.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .runtime_api_standin import RuntimeAPIStandin

REPO = Path(__file__).resolve().parents[2]
BOOTSTRAP = REPO / "shared" / "momor" / "lambda_bootstrap.sh"
FUNCTION_NAME = "momor-test"

EventBuilder = Callable[..., dict[str, Any]]


def _rest_event(
    method: str = "GET",
    path: str = "/",
    *,
    query: dict[str, list[str]] | None = None,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    stage: str = "prod",
) -> dict[str, Any]:
    """An API Gateway REST API (v1 payload) proxy event for `/{proxy+}`."""
    all_headers = {
        "Accept": "*/*",
        "Host": "1234567890.execute-api.us-east-1.amazonaws.com",
        "User-Agent": "momor-tests",
        "Via": "1.1 08f323deadbeefa7af34d5feb414ce27.cloudfront.net (CloudFront)",
        "X-Amz-Cf-Id": "cDehVQoZnx43VYQb9j2-nvCh-9z396Uhbp027Y2JvkCPNLmGJHqlaA==",
        "X-Amzn-Trace-Id": "Root=1-5e72a1b4-1a2b3c4d5e6f7a8b9c0d1e2f",
        "X-Forwarded-For": "127.0.0.1, 127.0.0.2",
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
        **(headers or {}),
    }
    return {
        "body": base64.b64encode(body).decode() if body is not None else None,
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "isBase64Encoded": body is not None,
        "queryStringParameters": {k: v[-1] for k, v in query.items()} if query else None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "headers": all_headers,
        "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
        "requestContext": {
            "accountId": "123456789012",
            "resourceId": "123456",
            "stage": stage,
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "extendedRequestId": "Kx9cRFYwoAMFYNg=",
            "requestTime": "09/Apr/2015:12:34:56 +0000",
            "requestTimeEpoch": 1428582896000,
            "identity": {
                "cognitoIdentityPoolId": None,
                "accountId": None,
                "cognitoIdentityId": None,
                "caller": None,
                "accessKey": None,
                "sourceIp": "127.0.0.1",
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "userArn": None,
                "userAgent": "momor-tests",
                "user": None,
            },
            "path": f"/{stage}{path}",
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "apiId": "1234567890",
            "protocol": "HTTP/1.1",
            "domainName": "1234567890.execute-api.us-east-1.amazonaws.com",
        },
    }


def _http_api_event(
    method: str = "GET",
    path: str = "/",
    *,
    raw_query: str = "",
    headers: dict[str, str] | None = None,
    cookies: list[str] | None = None,
    body: bytes | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (v2 payload) event for the `$default` route.

    Function URLs send the same shape (their requestContext names a lambda-url domain instead).
    """
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": {
            "accept": "*/*",
            "content-length": str(len(body or b"")),
            "host": "id.execute-api.us-east-1.amazonaws.com",
            "user-agent": "momor-tests",
            "x-amzn-trace-id": "Root=1-5e72a1b4-1a2b3c4d5e6f7a8b9c0d1e2f",
            "x-forwarded-for": "192.168.0.1",
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
            **(headers or {}),
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api-id",
            "domainName": "id.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "id",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.168.0.1",
                "userAgent": "momor-tests",
            },
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": "$default",
            "stage": "$default",
            "time": "12/Mar/2020:19:03:58 +0000",
            "timeEpoch": 1583348638390,
        },
        "isBase64Encoded": body is not None,
    }
    if cookies:
        event["cookies"] = cookies
    if raw_query:
        event["queryStringParameters"] = dict(pair.split("=", 1) for pair in raw_query.split("&"))
    if body is not None:
        event["body"] = base64.b64encode(body).decode()
    return event


@pytest.fixture
def rest_event() -> EventBuilder:
    return _rest_event


@pytest.fixture
def http_api_event() -> EventBuilder:
    return _http_api_event


class BridgeProcess:
    """A `python -m momor.lambda_stream` (or wrapper) process serving one stand-in."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(args, env=env, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_exit(self, timeout: float = 20.0) -> int:
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log.close()


def bridge_env(standin: RuntimeAPIStandin, **extra: str) -> dict[str, str]:
    """The environment Lambda gives a function, pointed at the stand-in (PYTHONPATH left out)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "_X_AMZN_TRACE_ID")}
    env.update(
        AWS_LAMBDA_RUNTIME_API=standin.address,
        AWS_LAMBDA_FUNCTION_NAME=FUNCTION_NAME,
        AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE="512",
        AWS_LAMBDA_LOG_GROUP_NAME=f"/aws/lambda/{FUNCTION_NAME}",
        AWS_LAMBDA_LOG_STREAM_NAME="2024/01/01/[$LATEST]0123456789abcdef",
    )
    env.update(extra)
    return env


class Runtime:
    """A stand-in and the bridge processes started against it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.standin = RuntimeAPIStandin().start()
        self.bridges: list[BridgeProcess] = []

    def start(self, app_spec: str, *, via_wrapper: bool = False, env: dict[str, str] | None = None) -> BridgeProcess:
        """Run the bridge for `app_spec`: directly with `-m`, or as the managed runtime would.

        Through the wrapper it runs the way /var/runtime/bootstrap does it (`wrapper interpreter
        bootstrap.py`), from a working directory outside the repo, with the repo as LAMBDA_TASK_ROOT:
        the app is then only importable if the wrapper and the loop set up sys.path as on Lambda.
        """
        if via_wrapper:
            args = [str(BOOTSTRAP), sys.executable, "/var/runtime/bootstrap.py"]
            process_env = bridge_env(self.standin, MOMOR_ASGI_APP=app_spec, LAMBDA_TASK_ROOT=str(REPO), **(env or {}))
            cwd = self.tmp
        else:
            args = [sys.executable, "-m", "momor.lambda_stream", app_spec]
            process_env, cwd = bridge_env(self.standin, **(env or {})), REPO
        bridge = BridgeProcess(args, process_env, cwd, self.tmp / f"bridge-{len(self.bridges)}.log")
        self.bridges.append(bridge)
        return bridge

    def close(self) -> None:
        for bridge in self.bridges:
            bridge.stop()
        self.standin.stop()


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime(tmp_path)
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def module_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime(tmp_path_factory.mktemp("lambda-runtime"))
    yield rt
    rt.close()


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.02)
