"""A strict fake of Amazon Bedrock Guardrails' ApplyGuardrail (REST-JSON, as botocore's bedrock-runtime
model writes it: POST /guardrail/{guardrailIdentifier}/version/{guardrailVersion}/apply, signed as
`bedrock`), for the `bedrock` guardrail check. It refuses what the real API refuses: another path or
content type, an unsigned request, a body with fields the model does not have or without `source` and
`content`, a source other than INPUT or OUTPUT, an unknown guardrail or version (ResourceNotFoundException).

Its one guardrail (`GUARDRAIL`, versions `1` and DRAFT) anonymizes e-mail addresses and blocks US
social security numbers (sensitive-information rules, ANONYMIZED and BLOCKED), and blocks the denied
topic "crypto" (a topic rule), answering the assessments, outputs and usage ApplyGuardrail does, on
INPUT and OUTPUT alike. `down` makes it answer 503
ServiceUnavailableException. tests/integration/test_guardrails.py drives it with boto3's own client."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.transport import read_body

GUARDRAIL = "gr7fake01"
VERSIONS = ("1", "DRAFT")
_PATH = re.compile(r"/guardrail/([^/]+)/version/([^/]+)/apply")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_USAGE = {"topicPolicyUnits": 1, "contentPolicyUnits": 0, "wordPolicyUnits": 0, "sensitiveInformationPolicyUnits": 1,
          "sensitiveInformationPolicyFreeUnits": 0, "contextualGroundingPolicyUnits": 0}
BLOCKED_MESSAGE = "Sorry, the model cannot answer this question."


class FakeBedrockGuardrail:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.down = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        status, answer, kind = self._answer(scope["method"], scope["path"], headers, body)
        out = [(b"content-type", b"application/json")]
        if kind:
            out.append((b"x-amzn-errortype", kind.encode()))
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes
                ) -> tuple[int, dict[str, Any], str | None]:
        matched = _PATH.fullmatch(path)
        if method != "POST" or matched is None:
            return 404, {"message": "no such operation"}, "UnknownOperationException"
        if not headers.get("content-type", "").startswith("application/json"):
            return 400, {"message": "content type must be application/json"}, "ValidationException"
        auth = headers.get("authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 Credential=") or "/bedrock/aws4_request" not in auth:
            return 403, {"message": "the request is not signed for bedrock"}, "AccessDeniedException"
        try:
            request = json.loads(body)
        except ValueError:
            return 400, {"message": "the body is not JSON"}, "ValidationException"
        self.requests.append({"guardrail": matched.group(1), "version": matched.group(2), **request})
        if self.down:
            return 503, {"message": "the fake is down"}, "ServiceUnavailableException"
        if not isinstance(request, dict) or not {"source", "content"} <= set(request) \
                or set(request) - {"source", "content", "outputScope"}:
            return 400, {"message": "source and content are required; nothing else but outputScope"}, \
                "ValidationException"
        if matched.group(1) != GUARDRAIL or matched.group(2) not in VERSIONS:
            return 404, {"message": "the guardrail was not found"}, "ResourceNotFoundException"
        if request["source"] not in ("INPUT", "OUTPUT"):
            return 400, {"message": "source must be INPUT or OUTPUT"}, "ValidationException"
        content = request["content"]
        if not isinstance(content, list) or not content or not all(
                isinstance(c, dict) and set(c) == {"text"} and isinstance(c["text"], dict)
                and isinstance(c["text"].get("text"), str) and set(c["text"]) <= {"text", "qualifiers"}
                for c in content):
            return 400, {"message": "content must be text blocks"}, "ValidationException"
        return 200, _assess(" ".join(c["text"]["text"] for c in content)), None


def _assess(text: str) -> dict[str, Any]:
    assessment: dict[str, Any] = {}
    if "crypto" in text.lower():
        assessment["topicPolicy"] = {"topics": [{"name": "crypto", "type": "DENY", "action": "BLOCKED",
                                                 "detected": True}]}
        return {"usage": _USAGE, "action": "GUARDRAIL_INTERVENED", "outputs": [{"text": BLOCKED_MESSAGE}],
                "assessments": [assessment]}
    emails, ssns = _EMAIL.findall(text), _SSN.findall(text)
    if not emails and not ssns:
        return {"usage": _USAGE, "action": "NONE", "outputs": [], "assessments": [{}]}
    assessment["sensitiveInformationPolicy"] = {
        "piiEntities": [{"match": e, "type": "EMAIL", "action": "ANONYMIZED", "detected": True} for e in emails]
        + [{"match": n, "type": "US_SOCIAL_SECURITY_NUMBER", "action": "BLOCKED", "detected": True} for n in ssns],
        "regexes": []}
    if ssns:  # a blocked entity: the guardrail answers its blocked message instead of the text
        return {"usage": _USAGE, "action": "GUARDRAIL_INTERVENED", "outputs": [{"text": BLOCKED_MESSAGE}],
                "assessments": [assessment]}
    return {"usage": _USAGE, "action": "GUARDRAIL_INTERVENED", "outputs": [{"text": _EMAIL.sub("{EMAIL}", text)}],
            "assessments": [assessment]}
