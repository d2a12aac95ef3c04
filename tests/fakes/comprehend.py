"""A strict fake of Amazon Comprehend's DetectPiiEntities (JSON 1.1, as botocore's service model for
comprehend writes it), for the `comprehend` guardrail check. It refuses what the real API refuses:
another target or content type, an unsigned request, unknown or missing fields, an empty text or one
past 100 KB of UTF-8 (TextSizeLimitExceededException), a language PII detection does not support
(UnsupportedLanguageException). It finds EMAIL, CREDIT_DEBIT_NUMBER and NAME (two capitalised words
after "name is") with character offsets, as Comprehend reports them. `down` makes it answer 500
InternalServerException; every request is kept (`requests`). tests/integration/test_guardrails.py
drives it with boto3's own client, so its shape is boto3's."""

from __future__ import annotations

import json
import re
from typing import Any

TARGET = "Comprehend_20171127.DetectPiiEntities"
CONTENT_TYPE = "application/x-amz-json-1.1"
MAX_TEXT_BYTES = 100_000
PII_LANGUAGES = ("en", "es")
_FINDERS = (
    ("EMAIL", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"), 0.99),
    ("CREDIT_DEBIT_NUMBER", re.compile(r"\b\d(?:[ -]?\d){12,18}\b"), 0.98),
    ("NAME", re.compile(r"(?<=name is )[A-Z][a-z]+ [A-Z][a-z]+"), 0.9),
)


class FakeComprehend:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.down = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        status, answer = self._answer(scope["method"], scope["path"], headers, body)
        payload = json.dumps(answer).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", CONTENT_TYPE.encode()), (b"x-amzn-requestid", b"fake")]})
        await send({"type": "http.response.body", "body": payload})

    def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        if method != "POST" or path != "/":
            return 404, _error("UnknownOperationException", "no such operation")
        if headers.get("x-amz-target") != TARGET:
            return 400, _error("UnknownOperationException", f"unknown target {headers.get('x-amz-target')!r}")
        if headers.get("content-type") != CONTENT_TYPE:
            return 400, _error("SerializationException", "content type must be application/x-amz-json-1.1")
        auth = headers.get("authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 Credential=") or "/comprehend/aws4_request" not in auth \
                or "x-amz-date" not in headers:
            return 403, _error("MissingAuthenticationTokenException", "the request is not signed for comprehend")
        try:
            request = json.loads(body)
        except ValueError:
            return 400, _error("SerializationException", "the body is not JSON")
        self.requests.append(request)
        if self.down:
            return 500, _error("InternalServerException", "the fake is down")
        if not isinstance(request, dict) or set(request) != {"Text", "LanguageCode"}:
            return 400, _error("InvalidRequestException", "Text and LanguageCode are required, and nothing else")
        text, language = request["Text"], request["LanguageCode"]
        if not isinstance(text, str) or not text:
            return 400, _error("InvalidRequestException", "Text must be at least 1 character")
        if len(text.encode()) > MAX_TEXT_BYTES:
            return 400, _error("TextSizeLimitExceededException", "Text is larger than 100 KB")
        if language not in PII_LANGUAGES:
            return 400, _error("UnsupportedLanguageException", f"PII detection does not support {language!r}")
        entities = [{"Score": score, "Type": kind, "BeginOffset": m.start(), "EndOffset": m.end()}
                    for kind, pattern, score in _FINDERS for m in pattern.finditer(text)]
        return 200, {"Entities": sorted(entities, key=lambda e: e["BeginOffset"])}


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"__type": f"com.amazonaws.comprehend#{kind}", "Message": message}
