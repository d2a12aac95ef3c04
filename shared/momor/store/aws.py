"""boto3 clients, made once per process and per service.

Making a boto3 client costs tens of milliseconds (it loads the service model), and importing
boto3 costs more, so both happen on first use: a route that never touches S3 or DynamoDB never
pays, and no request pays twice. Clients are thread-safe once made; making one is not (sessions
are not), hence the lock.

Where clients point is boto3's business: AWS_ENDPOINT_URL or the per-service
AWS_ENDPOINT_URL_S3 / _DYNAMODB / _SECRETS_MANAGER reach local emulators with no code change. The
signed requests made here (and in dynamo.py) follow the same variables, else the region's endpoint
in its partition's domain (`dns_suffix`: amazonaws.com.cn in China, and so on).

boto3 blocks. Async code calls it through `in_thread`, which runs the call on the default
executor so the event loop keeps serving other requests meanwhile.

The first call of a Lambda reads two things: the catalog (S3 GetObject) and the saved keys
(Secrets Manager GetSecretValue). A boto3 client for each loads its service model (S3's is
megabytes of JSON), 100-300 ms of a cold start on one vCPU for one request each (infra/bench
lambda_cold). `lean_client` makes those two reads as single signed HTTP requests instead, signed by
sigv4.py with the environment's credentials (Lambda's), or else those of botocore's chain through the
process's one session (the same session `client` uses), so every credential source boto3 knows still
works; nothing else goes that way. Inside Lambda, neither boto3 nor botocore is imported for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import http.client
import io
import json
import os
import re
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from . import aws_session, sigv4
from .aws_session import credentials, dns_suffix, region, session

T = TypeVar("T")

_clients: dict[str, Any] = {}
_boto3: Any = None
_lean: dict[str, Any] = {}
_lock = threading.Lock()  # making a client is not thread-safe (sessions are not)


def client(service: str) -> Any:
    """The process's client for `service` ("s3", "dynamodb", "secretsmanager")."""
    made = _clients.get(service)
    if made is not None:
        return made
    with _lock:
        made = _clients.get(service)
        if made is None:
            import boto3  # lazy: see the module docstring
            from botocore.config import Config

            # Standard retries back off on throttling; short connect timeout so a dead
            # endpoint fails a request in seconds rather than the Lambda's whole budget.
            config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=20)
            made = _clients[service] = _boto3_session(boto3).client(service, config=config, region_name=region())
    return made


def _boto3_session(boto3: Any) -> Any:
    """The one boto3 session over the process's botocore session (call with _lock held): each boto3
    session registers its handlers on the botocore session it wraps, so a second one over the same
    botocore session makes a second client of a service fail (boto3's S3 methods injected twice)."""
    global _boto3
    if _boto3 is None:
        _boto3 = boto3.session.Session(botocore_session=session())
    return _boto3


def bounded_client(service: str, timeout: float) -> Any:
    """A client for `service` whose every request is one attempt of at most about `timeout` seconds to
    connect and to read: for a call's optional step (the response cache's large answers, cache_objects.py)
    that gives up at a bound of its own rather than retrying for the client's 20 s."""
    # Written out beside client() rather than folded into one maker: the template's grant scan
    # (tests/lambda/aws_usage.py) reads each `.client(service, ...)` where its service is a parameter of
    # the function it is in, and cannot follow one passed down another level.
    name = f"{service}@{timeout:g}"
    made = _clients.get(name)
    if made is not None:
        return made
    with _lock:
        made = _clients.get(name)
        if made is None:
            import boto3  # lazy: see the module docstring
            from botocore.config import Config

            config = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=timeout,
                            read_timeout=timeout)
            made = _clients[name] = _boto3_session(boto3).client(service, config=config, region_name=region())
    return made


def reset_clients() -> None:
    """For tests (and a SnapStart restore): forget the session and everything made from it (these
    clients, the lean readers, dynamo.py's signer), so the next call reads the (changed) environment."""
    aws_session.reset()


def _forget() -> None:
    global _boto3
    with _lock:
        _boto3 = None
        _clients.clear()
        _lean.clear()


aws_session.on_reset(_forget)


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a blocking boto3 call without blocking the event loop."""
    return await asyncio.to_thread(fn, *args, **kwargs)


# --- the two cold-start reads as single signed requests ----------------------------------------------


class AwsError(Exception):
    """AWS refused a lean call (`status` is the HTTP status; 0 when no answer came)."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code, self.message, self.status = code, message, status


_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_ATTEMPTS = 3
_XML_FIELD = re.compile(rb"<(Code|Message)>([^<]*)</\1>")


def _endpoint(service_env: str) -> str | None:
    """A local endpoint, as boto3 reads it: the per-service variable, else AWS_ENDPOINT_URL."""
    given = os.environ.get(f"AWS_ENDPOINT_URL_{service_env}") or os.environ.get("AWS_ENDPOINT_URL")
    return given.rstrip("/") if given else None


_quick: contextvars.ContextVar[float | None] = contextvars.ContextVar("momor_aws_quick", default=None)


@contextlib.contextmanager
def quick(timeout: float) -> Any:
    """Lean reads made within (and in threads started with a copy of this context) try once, for at
    most `timeout` seconds: the SnapStart after-restore hook, which Lambda gives 10 s in all."""
    token = _quick.set(timeout)
    try:
        yield
    finally:
        _quick.reset(token)


_SIGNING = {"bedrock-runtime": "bedrock"}
"""Services whose requests are signed under another name than boto3's for them."""


def _signed(service: str, method: str, url: str, headers: dict[str, str], body: bytes,
            timeout: float) -> tuple[int, dict[str, str], bytes]:
    """One SigV4-signed request (sigv4.py), retried on throttling, 5xx and connection errors like
    boto3's standard mode (3 attempts; one within `quick`). Answers (status, lower-cased headers, body)
    whatever the status."""
    service = _SIGNING.get(service, service)  # boto3's name for it -> the name its requests are signed under
    bound = _quick.get()
    attempts = 1 if bound is not None else _ATTEMPTS
    timeout = min(timeout, bound) if bound is not None else timeout
    for attempt in range(attempts):
        found = credentials()  # each attempt: a refreshed credential is picked up
        if found is None:
            raise AwsError("MissingCredentials", "no AWS credentials were found", 0)
        signed = sigv4.sign(method, url, headers, body, service=service, region=region(), credentials=found)
        try:
            status, got, data = _send(method, url, signed, body, timeout)
            if status not in _RETRY_STATUS or attempt == attempts - 1:
                return status, got, data
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out: no answer at all
            if attempt == attempts - 1:
                raise AwsError("ConnectionError", f"cannot reach {service}: {exc}", 0) from None
        time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


_tls: ssl.SSLContext | None = None


def _send(
    method: str, url: str, headers: dict[str, str], body: bytes, timeout: float
) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh connection (two per cold start, so no pool); a TLS context is made
    only for https (AWS), once per process: making one costs tens of milliseconds."""
    global _tls
    parts = urllib.parse.urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if parts.scheme == "https":
        if _tls is None:
            _tls = ssl.create_default_context()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(parts.netloc, timeout=timeout, context=_tls)
    else:
        conn = http.client.HTTPConnection(parts.netloc, timeout=timeout)
    try:
        conn.request(method, path, body=body or None, headers=headers)
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


class LeanS3:
    """GetObject (with IfNoneMatch) as boto3's client answers it: {"Body": file, "ETag": ...,
    "Metadata": {name: value} (the x-amz-meta-* headers)}; an unchanged object raises AwsError with
    status 304, as boto3 raises a ClientError."""

    def get_object(self, *, Bucket: str, Key: str, IfNoneMatch: str | None = None) -> dict[str, Any]:
        path = urllib.parse.quote(Key, safe="/~")
        local = _endpoint("S3")
        if local:
            url = f"{local}/{Bucket}/{path}"
        elif "." in Bucket:  # a dotted name cannot be a TLS host name: path style
            url = f"https://s3.{region()}.{dns_suffix(region())}/{Bucket}/{path}"
        else:
            url = f"https://{Bucket}.s3.{region()}.{dns_suffix(region())}/{path}"
        headers = {"If-None-Match": IfNoneMatch} if IfNoneMatch else {}
        status, got, body = _signed("s3", "GET", url, headers, b"", timeout=20.0)
        if status == 200:
            metadata = {k[len("x-amz-meta-"):]: v for k, v in got.items() if k.startswith("x-amz-meta-")}
            return {"Body": io.BytesIO(body), "ETag": got.get("etag"), "Metadata": metadata}
        fields = dict(_XML_FIELD.findall(body))
        code = fields.get(b"Code", b"").decode(errors="replace") or str(status)
        raise AwsError(code, fields.get(b"Message", b"").decode(errors="replace"), status)


def _json_answer(status: int, data: bytes, code_of: Any) -> dict[str, Any]:
    """A JSON API's answer: the object on a 200, else an AwsError with the code `code_of(answer)` gives
    and the answer's message (which names the resource and the reason, never a secret's value)."""
    try:
        answer = json.loads(data) if data else {}
    except ValueError:
        answer = {}
    if status == 200 and isinstance(answer, dict):
        return answer
    answer = answer if isinstance(answer, dict) else {}
    raise AwsError(code_of(answer), str(answer.get("message") or answer.get("Message") or ""), status)


def _json_type(status: int) -> Any:
    """JSON 1.1's error code: the answer's `__type`, less its namespace."""
    return lambda answer: str(answer.get("__type", status)).rsplit("#", 1)[-1]


class LeanSecretsManager:
    """GetSecretValue as boto3's client answers it: {"SecretString": ...} (or SecretBinary)."""

    def get_secret_value(self, *, SecretId: str) -> dict[str, Any]:
        url = (_endpoint("SECRETS_MANAGER") or f"https://secretsmanager.{region()}.{dns_suffix(region())}") + "/"
        headers = {"X-Amz-Target": "secretsmanager.GetSecretValue", "Content-Type": "application/x-amz-json-1.1"}
        status, _, body = _signed("secretsmanager", "POST", url, headers, json.dumps({"SecretId": SecretId}).encode(),
                                  timeout=20.0)
        return _json_answer(status, body, _json_type(status))


class LeanComprehend:
    """DetectPiiEntities as boto3's client answers it: {"Entities": [{"Score", "Type", "BeginOffset",
    "EndOffset"}]} (JSON 1.1, botocore's comprehend model), for the `comprehend` guardrail check."""

    def detect_pii_entities(self, *, Text: str, LanguageCode: str) -> dict[str, Any]:
        url = (_endpoint("COMPREHEND") or f"https://comprehend.{region()}.{dns_suffix(region())}") + "/"
        headers = {"X-Amz-Target": "Comprehend_20171127.DetectPiiEntities",
                   "Content-Type": "application/x-amz-json-1.1"}
        body = json.dumps({"Text": Text, "LanguageCode": LanguageCode}).encode()
        status, _, data = _signed("comprehend", "POST", url, headers, body, timeout=5.0)
        return _json_answer(status, data, _json_type(status))


class LeanBedrockRuntime:
    """ApplyGuardrail as boto3's client answers it (REST-JSON, botocore's bedrock-runtime model:
    POST /guardrail/{id}/version/{version}/apply, signed as `bedrock`), for the `bedrock` guardrail check."""

    def apply_guardrail(self, *, guardrailIdentifier: str, guardrailVersion: str, source: str,
                        content: list[dict[str, Any]]) -> dict[str, Any]:
        base = _endpoint("BEDROCK_RUNTIME") or f"https://bedrock-runtime.{region()}.{dns_suffix(region())}"
        path = (f"/guardrail/{urllib.parse.quote(guardrailIdentifier, safe='')}"
                f"/version/{urllib.parse.quote(guardrailVersion, safe='')}/apply")
        body = json.dumps({"source": source, "content": content}).encode()
        status, got, data = _signed("bedrock-runtime", "POST", base + path, {"Content-Type": "application/json"},
                                    body, timeout=5.0)
        # REST-JSON names its error in a header, `Code:` and where it came from.
        return _json_answer(status, data, lambda _: got.get("x-amzn-errortype", str(status)).split(":", 1)[0])


_LEAN = {"s3": LeanS3, "secretsmanager": LeanSecretsManager, "comprehend": LeanComprehend,
         "bedrock-runtime": LeanBedrockRuntime}


def lean_client(service: str) -> Any:
    """The process's lean caller for "s3" (get_object), "secretsmanager" (get_secret_value),
    "comprehend" (detect_pii_entities) or "bedrock-runtime" (apply_guardrail)."""
    made = _lean.get(service)
    if made is None:
        made = _lean.setdefault(service, _LEAN[service]())
    return made
