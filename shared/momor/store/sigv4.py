"""AWS Signature Version 4 for the few signed requests Momor makes itself (DynamoDB's JSON protocol,
the catalog's S3 GetObject, the keys' Secrets Manager GetSecretValue), and the credentials they use.

botocore signs these just as well, but importing its signer (`botocore.auth`, which brings urllib3 and
botocore.compat) costs about 83 ms of CPU on one vCPU, most of what a Lambda's INIT spends on AWS before
FastAPI (infra/bench/PROPOSALS.md §6), and its request objects cost tens of microseconds per call. The
algorithm is AWS's published one (canonical request, string to sign, HMAC-SHA256 key chain) and is
written here to produce exactly what botocore's SigV4Auth and S3SigV4Auth produce for these requests:
tests/unit/test_sigv4.py signs the same requests both ways and compares every header.

What these requests need and nothing more: no query-string signing beyond sorting the URL's own pairs,
no chunked or unsigned payloads (the body is always hashed), paths already percent-encoded by the
caller (S3 signs the path as given; other services have the path `/`).

Credentials: Lambda puts the execution role's credentials in the environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), which botocore's chain also reads first; they are read
from the environment on each request (a restored SnapStart copy sees its own). Anywhere they are not
set (a profile, SSO, a container or instance role, SnapStart's container credentials), botocore's
whole chain answers, through store/aws.py's one session, with its refreshing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import urllib.parse
from typing import NamedTuple

_UNSIGNED_HEADERS = frozenset({
    "baggage", "connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
    "traceparent", "tracestate", "trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id",
})
"""Headers botocore leaves out of the signature (hop-by-hop or added on the way): left out here too."""


class Credentials(NamedTuple):
    access_key: str
    secret_key: str
    token: str | None


def from_environment() -> Credentials | None:
    """The credentials in the environment, as botocore's first provider reads them, or None."""
    access, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not access or not secret:
        return None
    return Credentials(access, secret, os.environ.get("AWS_SESSION_TOKEN") or None)


def _host(parts: urllib.parse.SplitResult) -> str:
    # As the HTTP client sends it and botocore signs it: lower case, without a default port.
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    return host if parts.port in (None, default) else f"{host}:{parts.port}"


def _query(query: str) -> str:
    return "&".join(f"{k}={v}" for k, v in sorted(pair.partition("=")[::2] for pair in query.split("&"))) \
        if query else ""


def _key(secret: str, day: str, region: str, service: str) -> bytes:
    key = hmac.new(f"AWS4{secret}".encode(), day.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def sign(method: str, url: str, headers: dict[str, str], body: bytes, *, service: str, region: str,
         credentials: Credentials, now: dt.datetime | None = None) -> dict[str, str]:
    """`headers` with X-Amz-Date, X-Amz-Security-Token (when there is a token), for S3
    X-Amz-Content-SHA256, and Authorization added: what to send."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    payload = hashlib.sha256(body).hexdigest()
    out = {k: v for k, v in headers.items() if k.lower() not in ("authorization", "x-amz-date", "date")}
    out["X-Amz-Date"] = stamp
    if credentials.token:
        out["X-Amz-Security-Token"] = credentials.token
    if service == "s3":
        out["X-Amz-Content-SHA256"] = payload
    parts = urllib.parse.urlsplit(url)
    signed = {k.lower(): " ".join(str(v).split()) for k, v in out.items() if k.lower() not in _UNSIGNED_HEADERS}
    signed.setdefault("host", _host(parts))
    names = sorted(signed)
    path = parts.path or "/"
    if service != "s3":  # S3 signs its path as sent; the others, once more percent-encoded
        path = urllib.parse.quote(path, safe="/~")
    canonical = "\n".join([
        method.upper(), path, _query(parts.query),
        "".join(f"{n}:{signed[n]}\n" for n in names), ";".join(names), payload,
    ])
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    signature = hmac.new(_key(credentials.secret_key, stamp[:8], region, service), to_sign.encode(),
                         hashlib.sha256).hexdigest()
    out["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
                            f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return out
