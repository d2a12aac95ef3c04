"""template.yaml: SAM CLI accepts it (validate --lint), builds it offline, and it says what the design says.

The static checks read the template itself (CloudFormation short tags kept as their long form), so
a route, a streaming integration, a permission or a policy that drifts fails here, not on deploy.
"""

from __future__ import annotations

import importlib
import os
import re
import tomllib
from typing import Any

import pytest

from momor.config import ENV_VARS

from . import rie

ROOT = rie.ROOT
T = rie.load_template()
RESOURCES: dict[str, Any] = T["Resources"]
PATHS: dict[str, Any] = RESOURCES["MomorApi"]["Properties"]["DefinitionBody"]["paths"]
WRAPPER = "/opt/python/momor/lambda_bootstrap.sh"

# (method, path, function, streamed) for every route the issue lists.
ROUTES = [
    ("post", "/models", "ModelsFunction", True),
    ("post", "/models/chat", "ModelsFunction", True),
    ("post", "/models/two", "ModelsFunction", True),
    ("post", "/models/decision", "DecisionFunction", False),
    ("post", "/models/transcribe", "TranscribeFunction", False),
    ("post", "/v1/chat/completions", "ChatCompletionsFunction", True),
    ("post", "/models/completions", "ChatCompletionsFunction", True),
    ("post", "/router/v1/chat/completions", "ChatCompletionsFunction", True),
    ("post", "/router/chat/completions", "ChatCompletionsFunction", True),
    ("post", "/messages", "MessagesFunction", True),
    ("post", "/messages/count_tokens", "MessagesFunction", True),
    ("post", "/v1/messages", "MessagesFunction", True),
    ("post", "/v1/messages/count_tokens", "MessagesFunction", True),
    ("get", "/v1/models", "CatalogFunction", False),
    ("get", "/generations/{id}", "GenerationsFunction", False),
    ("get", "/models", "CatalogFunction", False),
]
FOLDERS = {
    "ModelsFunction": "models",
    "DecisionFunction": "decision",
    "TranscribeFunction": "transcribe",
    "ChatCompletionsFunction": "chat_completions",
    "MessagesFunction": "messages",
    "GenerationsFunction": "generations",
    "CatalogFunction": "catalog",
}
STREAMING = sorted({f for _, _, f, s in ROUTES if s})
BUFFERED = sorted({f for _, _, f, s in ROUTES if not s})
FUNCTIONS = STREAMING + BUFFERED


def of_type(kind: str) -> dict[str, Any]:
    return {k: v for k, v in RESOURCES.items() if v["Type"] == kind}


def sub_text(value: Any) -> str:
    """The text of a !Sub (the string form)."""
    assert isinstance(value, dict) and "Fn::Sub" in value, value
    text = value["Fn::Sub"]
    return text if isinstance(text, str) else text[0]


def props(logical_id: str) -> dict[str, Any]:
    return RESOURCES[logical_id]["Properties"]


def statements(logical_id: str) -> list[dict[str, Any]]:
    found = []
    for policy in props(logical_id).get("Policies", []):
        if "Statement" in policy:
            found += policy["Statement"]
    return found


def templates(logical_id: str) -> dict[str, Any]:
    """SAM policy templates the function uses (name -> parameters)."""
    return {k: v for p in props(logical_id).get("Policies", []) for k, v in p.items() if k != "Statement"}


# --- SAM CLI ----------------------------------------------------------------------------------------


@pytest.mark.sam
def test_sam_validate_lint():
    done = rie.run_sam("validate", "--lint", "--template-file", str(rie.TEMPLATE), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is a valid SAM Template" in done.stdout + done.stderr


@pytest.mark.sam
def test_sam_build_makes_every_function_and_both_layers():
    build = rie.sam_build()
    for function in FUNCTIONS:
        assert (build.artifact(function) / "app.py").is_file(), function
    momor = build.artifact("MomorLayer") / "python" / "momor"
    assert (momor / "__init__.py").is_file() and (momor / "lambda_stream" / "__main__.py").is_file()
    assert (momor / "catalog.schema.json").is_file()  # package data travels too
    wrapper = momor / "lambda_bootstrap.sh"
    assert wrapper.is_file() and os.access(wrapper, os.X_OK), "the exec wrapper must stay executable"
    deps = build.artifact("DependenciesLayer") / "python"
    for package in ("fastapi", "mangum", "httpx2", "pydantic", "boto3", "aws_lambda_powertools", "orjson"):
        assert (deps / package).is_dir(), package
    # Compiled dependencies are Lambda's: CPython 3.13 on x86_64 Linux.
    assert list((deps / "pydantic_core").glob("*.cpython-313-x86_64-linux-gnu.so"))
    assert list((deps / "orjson").glob("*.cpython-313-x86_64-linux-gnu.so"))
    # No dev tooling or stray build state in the layers.
    assert not list((build.artifact("MomorLayer") / "python").glob("*.egg-info"))
    assert not (deps / "pytest").exists() and not (deps / "jsonschema").exists()  # a test-only dependency


# --- the template, read -------------------------------------------------------------------------------


def test_parameters_and_outputs():
    assert {"Stage", "LogLevel"} <= set(T["Parameters"])
    api_url = sub_text(T["Outputs"]["ApiUrl"]["Value"])
    assert api_url.startswith("https://${MomorApi}.execute-api.${AWS::Region}.") and api_url.endswith("/${Stage}")
    assert RESOURCES["MomorApi"]["Properties"]["StageName"] == {"Ref": "Stage"}


def test_one_api_gateway_rest_api():
    assert list(of_type("AWS::Serverless::Api")) == ["MomorApi"]
    assert not of_type("AWS::Serverless::HttpApi")
    assert RESOURCES["MomorApi"]["Properties"]["TracingEnabled"] is True


def test_every_route_and_only_those():
    declared = {(m, p) for p, item in PATHS.items() for m in item}
    assert declared == {(m, p) for m, p, _, _ in ROUTES}


@pytest.mark.parametrize(("method", "path", "function", "streamed"), ROUTES)
def test_route_integration(method, path, function, streamed):
    integration = PATHS[path][method]["x-amazon-apigateway-integration"]
    assert integration["type"] == "aws_proxy" and integration["httpMethod"] == "POST"
    uri = sub_text(integration["uri"])
    if streamed:
        assert integration["responseTransferMode"] == "STREAM"
        assert uri == ("arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2021-11-15/functions/"
                       f"${{{function}.Arn}}/response-streaming-invocations")
    else:
        assert integration.get("responseTransferMode", "BUFFERED") == "BUFFERED"
        assert uri == ("arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/"
                       f"${{{function}.Arn}}/invocations")


@pytest.mark.parametrize(("method", "path", "function", "streamed"), ROUTES)
def test_route_invoke_permission(method, path, function, streamed):
    route = re.sub(r"\{[^}]+\}", "*", path)
    matching = [
        p for p in of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Ref": function}
        and sub_text(p["Properties"]["SourceArn"]).endswith(f"${{MomorApi}}/*/{method.upper()}{route}")
    ]
    assert len(matching) == 1
    assert matching[0]["Properties"]["Principal"] == "apigateway.amazonaws.com"
    assert matching[0]["Properties"]["Action"] == "lambda:InvokeFunction"


def test_no_permission_without_a_route():
    assert len(of_type("AWS::Lambda::Permission")) == len(ROUTES)


def test_functions_runtime_tracing_layers():
    glob_fn = T["Globals"]["Function"]
    assert glob_fn["Runtime"] == "python3.13" and glob_fn["Tracing"] == "Active"
    assert glob_fn["Handler"] == "app.handler"
    assert glob_fn["Layers"] == [{"Ref": "DependenciesLayer"}, {"Ref": "MomorLayer"}]
    assert sorted(of_type("AWS::Serverless::Function")) == sorted(FUNCTIONS)
    for function in FUNCTIONS:
        p = props(function)
        assert p["CodeUri"].rstrip("/") == f"functions/{FOLDERS[function]}"
        assert RESOURCES[function]["Metadata"]["BuildMethod"] == "python3.13"
        for key in ("Runtime", "Handler", "Tracing", "Layers"):
            assert key not in p, f"{function} overrides Globals {key}"


def test_layers():
    momor = props("MomorLayer")
    assert momor["ContentUri"].rstrip("/") == "shared"
    assert props("DependenciesLayer")["ContentUri"].rstrip("/") == "infra/sam/layer"
    for layer in ("MomorLayer", "DependenciesLayer"):
        assert RESOURCES[layer]["Metadata"]["BuildMethod"] == "python3.13"
        assert props(layer)["CompatibleRuntimes"] == ["python3.13"]


def test_layer_requirements_match_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lines = (ROOT / "infra" / "sam" / "layer" / "requirements.txt").read_text().splitlines()
    required = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert sorted(required) == sorted(project)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_powertools_and_settings_env(function):
    env = rie.function_env(function)
    assert env["POWERTOOLS_SERVICE_NAME"].startswith("momor-")
    assert env["POWERTOOLS_LOG_LEVEL"] == "INFO" and env["POWERTOOLS_METRICS_NAMESPACE"]
    all_vars = {**T["Globals"]["Function"]["Environment"]["Variables"],
                **props(function).get("Environment", {}).get("Variables", {})}
    momor_vars = {name for name in all_vars if name.startswith("MOMOR_")} - {"MOMOR_ASGI_APP"}
    assert momor_vars <= set(ENV_VARS), "a MOMOR_ variable momor.config does not read"
    assert all_vars["MOMOR_RECORDS_TABLE"] == {"Ref": "RecordsTable"}
    assert all_vars["MOMOR_API_KEYS_TABLE"] == {"Ref": "ApiKeysTable"}
    assert all_vars["MOMOR_CATALOG_BUCKET"] == {"Ref": "CatalogBucket"}
    assert all_vars["MOMOR_KEYS_SECRET"] == {"Ref": "ProviderKeysSecret"}


def test_service_names_differ():
    names = [rie.function_env(f)["POWERTOOLS_SERVICE_NAME"] for f in FUNCTIONS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("function", STREAMING)
def test_streaming_functions_start_through_the_exec_wrapper(function):
    env = props(function)["Environment"]["Variables"]
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == WRAPPER
    # The wrapper is shipped in the momor layer (ContentUri shared/ -> /opt/python).
    shipped = ROOT / "shared" / WRAPPER.removeprefix("/opt/python/")
    assert shipped.is_file() and os.access(shipped, os.X_OK)
    assert "MOMOR_ASGI_APP" in shipped.read_text()
    module, _, attr = env["MOMOR_ASGI_APP"].partition(":")
    app = importlib.import_module(f"functions.{FOLDERS[function]}.{module}")
    assert callable(getattr(app, attr))
    assert callable(app.handler)  # Handler app.handler still serves buffered invocations
    assert props(function)["Timeout"] > T["Globals"]["Function"]["Timeout"]


@pytest.mark.parametrize("function", BUFFERED)
def test_buffered_functions_run_the_stock_runtime(function):
    env = props(function).get("Environment", {}).get("Variables", {})
    assert "AWS_LAMBDA_EXEC_WRAPPER" not in env and "MOMOR_ASGI_APP" not in env
    assert "AWS_LAMBDA_EXEC_WRAPPER" not in T["Globals"]["Function"]["Environment"]["Variables"]


def test_tables():
    records = props("RecordsTable")
    assert records["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert records["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    keys = props("ApiKeysTable")
    assert keys["KeySchema"] == [{"AttributeName": "keyHash", "KeyType": "HASH"}]
    memory = props("MemoryTable")
    assert memory["KeySchema"] == [{"AttributeName": "threadKey", "KeyType": "HASH"}]
    assert memory["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    for table in ("RecordsTable", "ApiKeysTable", "MemoryTable"):
        p = props(table)
        assert p["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert p["BillingMode"] == "PAY_PER_REQUEST"
        assert RESOURCES[table]["DeletionPolicy"] == "Retain"


def test_bucket_and_secret():
    bucket = props("CatalogBucket")
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert RESOURCES["ProviderKeysSecret"]["Type"] == "AWS::SecretsManager::Secret"
    assert props("ProviderKeysSecret")["SecretString"] == "{}"  # parses as "no saved keys"


# --- least privilege ---------------------------------------------------------------------------------

CATALOG_OBJECT = "arn:${AWS::Partition}:s3:::${CatalogBucket}/${CatalogKey}"
API_KEYS = {"Fn::GetAtt": ["ApiKeysTable", "Arn"]}
RECORDS = {"Fn::GetAtt": ["RecordsTable", "Arn"]}
MEMORY = {"Fn::GetAtt": ["MemoryTable", "Arn"]}
SECRET = {"AWSSecretsManagerGetSecretValuePolicy": {"SecretArn": {"Ref": "ProviderKeysSecret"}}}

ROUTED = [*STREAMING, "DecisionFunction", "TranscribeFunction"]
"""Functions that route calls to providers: they read the catalog and the keys secret and write records."""

GRANTS: dict[str, set[tuple[str, str]]] = {
    **{f: {("s3:GetObject", "catalog"), ("dynamodb:GetItem", "api-keys"), ("dynamodb:PutItem", "records")}
       for f in ROUTED},
    # The router alias keeps its threads (momor/store/memory.py: GetItem, PutItem, DeleteItem).
    "ChatCompletionsFunction": {("s3:GetObject", "catalog"), ("dynamodb:GetItem", "api-keys"),
                                ("dynamodb:PutItem", "records"), ("dynamodb:GetItem", "memory"),
                                ("dynamodb:PutItem", "memory"), ("dynamodb:DeleteItem", "memory")},
    "GenerationsFunction": {("dynamodb:GetItem", "api-keys"), ("dynamodb:GetItem", "records")},
    "CatalogFunction": {("s3:GetObject", "catalog"), ("dynamodb:GetItem", "api-keys")},
}


def _target(resource: Any) -> str:
    if resource == API_KEYS:
        return "api-keys"
    if resource == RECORDS:
        return "records"
    if resource == MEMORY:
        return "memory"
    if isinstance(resource, dict) and "Fn::Sub" in resource and sub_text(resource) == CATALOG_OBJECT:
        return "catalog"
    raise AssertionError(f"unexpected resource {resource!r}")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_least_privilege(function):
    granted = set()
    for statement in statements(function):
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for action in actions:
            assert "*" not in action, action
            for resource in resources:
                granted.add((action, _target(resource)))
    assert granted == GRANTS[function]
    expected_templates = {**SECRET} if function in ROUTED else {}
    assert templates(function) == expected_templates
