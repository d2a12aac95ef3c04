"""Every function's call budget ends before Lambda or API Gateway would cut the call, read from SAM's
own translation of the template (what CloudFormation deploys, Globals merged in).

A call cut by Lambda's timeout is a stream ended without an error frame and a call with no record;
one cut by API Gateway is its own 504, not Momor's answer. So for every route: the function's
MOMOR_CALL_BUDGET_S (as momor.config reads it, its default where the template sets none) plus the
margin the attempt loop keeps for the error and the record (momor.invocation.MARGIN_S) fits in the
shorter of the function's Timeout and the integration's timeout (29 s for a buffered integration,
its timeoutInMillis for a STREAM one). And the decision and transcription routes, whose answers may
take minutes, are streamed with a Timeout of minutes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from momor import invocation
from momor.config import Config

from .test_template import translated

BUFFERED_LIMIT_S = 29.0
"""API Gateway REST's longest buffered integration (its default; raising it needs a quota increase)."""
STREAM_LIMIT_S = 900.0
"""A STREAM integration's longest (15 minutes), as Lambda's own longest Timeout."""
LONG_CALLS = {"/models/decision": "DecisionFunction", "/models/transcribe": "TranscribeFunction"}
TARGET = re.compile(r"\$\{(\w+?)(?:Aliaslive|\.Arn)\}")


@pytest.fixture(scope="module")
def cfn() -> dict[str, Any]:
    return translated()["Resources"]


def functions(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in cfn.items() if r["Type"] == "AWS::Lambda::Function"}


def call_budget(properties: dict[str, Any]) -> float:
    """The budget the function's process reads: its MOMOR_CALL_BUDGET_S, else momor.config's default."""
    value = properties.get("Environment", {}).get("Variables", {}).get("MOMOR_CALL_BUDGET_S")
    assert value is None or isinstance(value, str), f"MOMOR_CALL_BUDGET_S must be a literal, not {value!r}"
    return Config.from_env({"MOMOR_CALL_BUDGET_S": value} if value else {}).call_budget


def integrations(cfn: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(path, function, integration) for every route of the API."""
    api = next(r for r in cfn.values() if r["Type"] == "AWS::ApiGateway::RestApi")
    found = []
    for path, methods in api["Properties"]["Body"]["paths"].items():
        for method in methods.values():
            integration = method["x-amazon-apigateway-integration"]
            # A plain string once the LanguageExtensions transform has resolved the Fn::Sub's
            # parameters (template.yaml's Transform), else {"Fn::Sub": text or [text, values]}.
            uri = integration["uri"]
            uri = uri["Fn::Sub"] if isinstance(uri, dict) else uri
            match = TARGET.search(uri if isinstance(uri, str) else uri[0])
            assert match, integration
            found.append((path, match.group(1), integration))
    return found


def integration_limit(integration: dict[str, Any]) -> float:
    if integration.get("responseTransferMode") == "STREAM":
        return min(integration.get("timeoutInMillis", 29_000) / 1000, STREAM_LIMIT_S)
    return min(integration.get("timeoutInMillis", 29_000) / 1000, BUFFERED_LIMIT_S)


@pytest.mark.sam
def test_every_functions_call_budget_ends_before_its_timeout(cfn):
    found = functions(cfn)
    assert len(found) >= 8, sorted(found)
    for name, properties in found.items():
        timeout = properties["Timeout"]
        assert call_budget(properties) + invocation.MARGIN_S <= timeout, (
            f"{name}: a call budget of {call_budget(properties):g} s and the {invocation.MARGIN_S:g} s margin "
            f"do not fit in its Timeout of {timeout} s")


@pytest.mark.sam
def test_every_routes_call_budget_ends_before_api_gateway_cuts_it(cfn):
    found = functions(cfn)
    for path, function, integration in integrations(cfn):
        limit = min(integration_limit(integration), found[function]["Timeout"])
        assert call_budget(found[function]) + invocation.MARGIN_S <= limit, (path, function, limit)
        if integration.get("responseTransferMode") == "STREAM":
            # API Gateway would otherwise cut the stream before Lambda's Timeout does.
            assert integration["timeoutInMillis"] >= found[function]["Timeout"] * 1000, (path, integration)


@pytest.mark.sam
@pytest.mark.parametrize(("path", "function"), LONG_CALLS.items())
def test_decision_and_transcription_are_streamed_with_minutes_to_run(cfn, path, function):
    routes = {p: (f, i) for p, f, i in integrations(cfn)}
    target, integration = routes[path]
    assert target == function
    assert integration["responseTransferMode"] == "STREAM", integration
    assert "/response-streaming-invocations" in json.dumps(integration["uri"])
    properties = functions(cfn)[function]
    assert properties["Timeout"] >= 120 and call_budget(properties) >= 120, properties["Timeout"]
    variables = properties["Environment"]["Variables"]
    assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/python/momor/lambda_bootstrap.sh"
    assert variables["MOMOR_ASGI_APP"] == "app:app"
