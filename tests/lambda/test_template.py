"""template.yaml: SAM CLI accepts it (validate --lint), builds it offline, and it says what the design says.

The static checks read the template itself (CloudFormation short tags kept as their long form), so
a route, a streaming integration, a permission or a policy that drifts fails here, not on deploy.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from momor.config import ENV_VARS, Config, env_var
from momor.store import usage
from tests.docs_text import section

from . import aws_usage, rie

ROOT = rie.ROOT
T = rie.load_template()
RESOURCES: dict[str, Any] = T["Resources"]
PATHS: dict[str, Any] = RESOURCES["MomorApi"]["Properties"]["DefinitionBody"]["paths"]
WRAPPER = "/opt/python/momor/lambda_bootstrap.sh"
UNWRAPPED = "momor.lambda_stream.unwrapped.handler"

# (method, path, function, streamed) for every route the issue lists.
ROUTES = [
    ("post", "/models", "ModelsFunction", True),
    ("post", "/models/chat", "ModelsFunction", True),
    ("post", "/models/two", "ModelsFunction", True),
    ("post", "/models/decision", "DecisionFunction", True),
    ("post", "/models/transcribe", "TranscribeFunction", True),
    ("post", "/v1/embeddings", "EmbeddingsFunction", True),
    ("post", "/models/embed", "EmbeddingsFunction", True),
    ("post", "/v1/rerank", "RerankFunction", True),
    ("post", "/v2/rerank", "RerankFunction", True),
    ("post", "/models/rerank", "RerankFunction", True),
    ("post", "/v1/chat/completions", "ChatCompletionsFunction", True),
    ("post", "/models/completions", "ChatCompletionsFunction", True),
    ("post", "/router/v1/chat/completions", "ChatCompletionsFunction", True),
    ("post", "/router/chat/completions", "ChatCompletionsFunction", True),
    ("post", "/v1/responses", "ResponsesFunction", True),
    ("get", "/v1/responses/{response_id}", "ResponsesFunction", True),
    ("delete", "/v1/responses/{response_id}", "ResponsesFunction", True),
    ("get", "/v1/responses/{response_id}/input_items", "ResponsesFunction", True),
    ("post", "/messages", "MessagesFunction", True),
    ("post", "/messages/count_tokens", "MessagesFunction", True),
    ("post", "/v1/messages", "MessagesFunction", True),
    ("post", "/v1/messages/count_tokens", "MessagesFunction", True),
    ("get", "/v1/models", "CatalogFunction", False),
    ("get", "/generations/{id}", "GenerationsFunction", False),
    ("get", "/models", "CatalogFunction", False),
    ("get", "/usage", "UsageFunction", False),
    ("get", "/console", "UsageFunction", False),
    ("get", "/console/{name}", "UsageFunction", False),
    ("get", "/me", "UsageFunction", False),
    ("get", "/keys", "UsageFunction", False),
    ("post", "/keys", "UsageFunction", False),
    ("patch", "/keys/{id}", "UsageFunction", False),
    ("delete", "/keys/{id}", "UsageFunction", False),
    ("post", "/keys/{id}/rotate", "UsageFunction", False),
    ("get", "/audit", "UsageFunction", False),
    ("get", "/organizations/{id}", "UsageFunction", False),
    ("patch", "/organizations/{id}", "UsageFunction", False),
    ("get", "/models/{id+}", "CatalogFunction", False),
    ("get", "/v1/models/{id+}", "CatalogFunction", False),
    ("get", "/router/v1/models", "CatalogFunction", False),
    ("get", "/router/v1/models/{id+}", "CatalogFunction", False),
]
FOLDERS = {
    "ModelsFunction": "models",
    "DecisionFunction": "decision",
    "TranscribeFunction": "transcribe",
    "EmbeddingsFunction": "embeddings",
    "RerankFunction": "rerank",
    "ChatCompletionsFunction": "chat_completions",
    "ResponsesFunction": "responses",
    "MessagesFunction": "messages",
    "GenerationsFunction": "generations",
    "CatalogFunction": "catalog",
    "UsageFunction": "usage",
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


GUARDRAIL_CONDITIONS = {"ComprehendGuardrails", "BedrockGuardrails"}
"""Conditions a policy entry may be granted under (`!If [condition, {Statement}, !Ref AWS::NoValue]`):
the guardrail services a deployment chooses (GuardrailServices); read as granted, as when chosen."""


def _policies(logical_id: str) -> list[dict[str, Any]]:
    """The function's policy entries, a conditional one as its granted branch."""
    found = []
    for policy in props(logical_id).get("Policies", []):
        if "Fn::If" in policy:
            condition, granted, otherwise = policy["Fn::If"]
            assert condition in GUARDRAIL_CONDITIONS and otherwise == {"Ref": "AWS::NoValue"}, policy
            policy = granted
        found.append(policy)
    return found


def statements(logical_id: str) -> list[dict[str, Any]]:
    """What the function's role is granted: its Policies, and an AWS::IAM::Policy of its own on that
    role (a grant one function of a loop alone needs, template.yaml's StreamingFunctionTables)."""
    found = []
    for policy in _policies(logical_id):
        if "Statement" in policy:
            found += policy["Statement"]
    for policy in of_type("AWS::IAM::Policy").values():
        if {"Ref": f"{logical_id}Role"} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def templates(logical_id: str) -> dict[str, Any]:
    """SAM policy templates the function uses (name -> parameters)."""
    return {k: v for p in _policies(logical_id) for k, v in p.items() if k != "Statement"}


def test_guardrail_services_are_granted_only_when_chosen():
    """comprehend:DetectPiiEntities and bedrock:ApplyGuardrail sit behind GuardrailServices, off by default."""
    assert T["Parameters"]["GuardrailServices"]["Default"] == "none"
    for function in FUNCTIONS:
        for policy in props(function).get("Policies", []):
            actions = {a for st in policy.get("Statement", []) for a in _listed(st["Action"])}
            assert not actions & {"comprehend:DetectPiiEntities", "bedrock:ApplyGuardrail"}, function
    for condition, service in (("ComprehendGuardrails", "comprehend"), ("BedrockGuardrails", "bedrock")):
        choices = T["Conditions"][condition]["Fn::Or"]
        assert {c["Fn::Equals"][1] for c in choices} == {service, "both"}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


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
    # The console's static files, the chart library vendored from npm (infra/setup.sh) included.
    for asset in ("index.html", "console.js", "console.css", "chart.umd.min.js"):
        assert (momor / "console" / asset).is_file(), asset
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


EM_X86_64, EM_AARCH64 = 62, 183
"""ELF e_machine values (the ELF specification's machine numbers)."""


def elf_machines(folder: Path) -> dict[Path, int]:
    """Every ELF file under `folder` (shared objects, their vendored .libs, executables) and its e_machine."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as f:
                head = f.read(20)
            if len(head) == 20 and head[:4] == b"\x7fELF":
                found[path] = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return found


@pytest.mark.sam
@pytest.mark.parametrize(("architecture", "machine"), [("arm64", EM_AARCH64), ("x86_64", EM_X86_64)])
def test_the_built_layers_hold_binaries_for_the_architecture_parameter_only(architecture, machine):
    """Lambda loads a layer's compiled extensions (pydantic-core, orjson, lxml, Pillow...) on the
    function's architecture only: `sam build` for Architecture=arm64 on this x86_64 machine must fetch
    aarch64 wheels (infra/sam/layer/layer.mk), not this machine's, and x86_64 stays one parameter away."""
    build = rie.sam_build(architecture)
    machines = elf_machines(build.dir)
    deps = build.artifact("DependenciesLayer") / "python"
    assert sum(1 for path in machines if deps in path.parents) > 20, sorted(machines)[:5]
    for package in ("pydantic_core", "orjson", "lxml", "PIL"):
        assert any(deps / package in path.parents for path in machines), f"no compiled {package}"
    wrong = sorted(str(path.relative_to(build.dir)) for path, found in machines.items() if found != machine)
    assert not wrong, f"{len(wrong)} binaries for another machine in the {architecture} build, e.g. {wrong[:5]}"
    # The built template points the layer at what was built. Its Metadata is as written ({"Ref":
    # "Architecture"}): with language extensions on (samconfig.toml) SAM CLI writes the template out
    # unexpanded, its loops left for CloudFormation, so the binaries above are what show the build ran
    # for `architecture`.
    built = rie.load_template(build.dir / "template.yaml")["Resources"]["DependenciesLayer"]
    assert built["Properties"]["ContentUri"] == "DependenciesLayer"


@pytest.mark.sam
def test_sam_build_stops_when_the_consoles_chart_library_is_missing(tmp_path):
    """Chart.js is not in git (infra/setup.sh copies it from npm): a build without it must fail and
    say what to run, not ship a console that draws nothing. The momor layer alone, built by SAM CLI
    from a copy of shared/ (the same Makefile), without the file and then with it."""
    shared = shutil.copytree(ROOT / "shared", tmp_path / "shared", ignore=shutil.ignore_patterns("__pycache__"))
    chart = shared / "momor" / "console" / "chart.umd.min.js"
    chart.unlink(missing_ok=True)
    layer = {**RESOURCES["MomorLayer"], "Properties": {**props("MomorLayer"), "ContentUri": "shared/"}}
    template = tmp_path / "template.yaml"
    template.write_text(json.dumps({"AWSTemplateFormatVersion": "2010-09-09", "Transform": T["Transform"],
                                    "Resources": {"MomorLayer": layer}}))

    def build() -> subprocess.CompletedProcess[str]:
        shutil.rmtree(tmp_path / "build", ignore_errors=True)
        return rie.run_sam("build", "--template-file", str(template), "--build-dir", str(tmp_path / "build"),
                           "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path, timeout=300)

    missing = build()
    assert missing.returncode != 0
    assert "chart.umd.min.js is missing: run infra/setup.sh" in missing.stdout + missing.stderr
    chart.write_text("/* Chart.js */")
    present = build()
    assert present.returncode == 0, present.stdout[-2000:] + present.stderr[-2000:]
    assert (tmp_path / "build" / "MomorLayer" / "python" / "momor" / "console" / "chart.umd.min.js").is_file()


UNCHECKED_HASH = 0b01
"""PEP 552 flags of a hash-based .pyc whose source is never checked."""


@pytest.mark.sam
def test_the_built_layers_carry_unchecked_bytecode_for_every_module():
    build = rie.sam_build()
    assert sys.implementation.cache_tag == "cpython-313", "compare with the runtime's own interpreter"
    for layer in rie.LAYERS:
        root = build.artifact(layer) / "python"
        sources = sorted(root.rglob("*.py"))
        assert len(sources) > (50 if layer == "MomorLayer" else 500), layer
        missing = [p for p in sources if not Path(importlib.util.cache_from_source(str(p))).is_file()]
        assert not missing, f"{layer}: {len(missing)} modules without bytecode, e.g. {missing[:3]}"
        checked = [p for p in sources
                   if Path(importlib.util.cache_from_source(str(p))).read_bytes()[4:8] != UNCHECKED_HASH.to_bytes(4,
                                                                                                            "little")]
        assert not checked, f"{layer}: bytecode Python would check against the source, e.g. {checked[:3]}"


@pytest.mark.sam
def test_a_cold_start_from_the_built_layers_compiles_nothing(tmp_path):
    """Lambda's /opt is read-only and the layer zip keeps source mtimes only roughly: the built
    bytecode must be used as it is. Here the sources are touched (as an unzip may leave them) and
    Python may write, so any module it had to compile shows as a .pyc written."""
    build = rie.sam_build()
    layers = [shutil.copytree(build.artifact(layer), tmp_path / layer) for layer in rie.LAYERS]
    function = shutil.copytree(build.artifact("ModelsFunction"), tmp_path / "task")
    later = time.time() + 3600
    for layer in layers:
        for source in Path(layer).rglob("*.py"):
            os.utime(source, (later, later))
    before = {p for layer in layers for p in Path(layer).rglob("*")}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join([str(function), *(str(Path(layer) / "python") for layer in reversed(layers))])
    done = subprocess.run([sys.executable, "-S", "-v", "-c", "import app, momor.lambda_stream.runner"], cwd=function,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    written = {p for layer in layers for p in Path(layer).rglob("*")} - before
    assert not written, f"{len(written)} files written, e.g. {sorted(written)[:3]}"
    loaded = [line.removeprefix("# code object from ") for line in done.stderr.splitlines()
              if line.startswith("# code object from ") and str(tmp_path) in line and str(function) not in line]
    assert len(loaded) > 100, loaded
    from_source = [line for line in loaded if not line.endswith(".pyc'")]
    assert not from_source, f"compiled at import: {from_source[:5]}"


SAM_TRANSLATE = ROOT / "tests" / "lambda" / "sam_translate.py"


def _translate_args(code: dict[str, Path] | None, template: Path, flags: tuple[str, ...]) -> list[str]:
    folders = [arg for logical_id, folder in (code or {}).items() for arg in ("--code", f"{logical_id}={folder}")]
    return [str(rie.SAM_VENV / "bin" / "python"), str(SAM_TRANSLATE), str(template), *folders, *flags]


def translated(*overrides: str, code: dict[str, Path] | None = None, template: Path = rie.TEMPLATE,
               only_its_own: bool = False, before_sam: bool = False) -> dict[str, Any]:
    """What CloudFormation makes of the template (tests/lambda/sam_translate.py: `sam package`, then
    AWS::LanguageExtensions, then SAM's translator), with parameter overrides (`Name=Value`) and
    `code`: resources whose code is packaged from a folder (the others get a fixed placeholder).
    `only_its_own`: the LanguageExtensions step resolves only the functions its documentation says it
    does (Fn::ToJsonString...), every other Ref left to CloudFormation; `before_sam`: what SAM is given."""
    flags = (("--only-its-own-functions",) if only_its_own else ()) + (("--language-extensions-only",)
                                                                       if before_sam else ())
    done = subprocess.run([*_translate_args(code, template, flags), *overrides], capture_output=True, text=True,
                          timeout=300, env=rie.sam_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def translated_many(overrides: list[dict[str, str]], *, only_its_own: bool = False,
                    template: Path = rie.TEMPLATE) -> list[dict[str, Any]]:
    """translated() for each set of overrides, in one interpreter (sam_translate.py --batch)."""
    flags = ("--batch", *(("--only-its-own-functions",) if only_its_own else ()))
    done = subprocess.run(_translate_args(None, template, flags), input="".join(json.dumps(o) + "\n"
                                                                                     for o in overrides),
                          capture_output=True, text=True, timeout=600, env=rie.sam_env())
    assert done.returncode == 0, done.stderr[-3000:]
    found = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(found) == len(overrides)
    return found


@pytest.mark.sam
def test_snapstart_is_a_parameter_and_the_api_invokes_the_snapshotted_versions():
    """SnapStart applies to published versions only: with it on, each streaming function publishes
    one, and API Gateway must invoke that (through the alias), not $LATEST."""
    assert T["Parameters"]["SnapStart"]["AllowedValues"] == ["None", "PublishedVersions"]
    assert T["Parameters"]["SnapStart"]["Default"] == "PublishedVersions"
    resources = translated()["Resources"]
    switched_off = translated("SnapStart=None")["Resources"]
    for function in STREAMING:
        # The parameter's value (the LanguageExtensions transform resolves it): on by default (issue 27:
        # 256 MB starts in under 1 s only from a snapshot), off one parameter away.
        assert props(function)["SnapStart"] == {"ApplyOn": {"Ref": "SnapStart"}}
        assert resources[function]["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
        assert switched_off[function]["Properties"]["SnapStart"] == {"ApplyOn": "None"}
        alias = resources[f"{function}Aliaslive"]
        assert alias["Type"] == "AWS::Lambda::Alias"
        version = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
        assert resources[version]["Type"] == "AWS::Lambda::Version"
    for function in BUFFERED:
        assert "SnapStart" not in resources[function]["Properties"]  # their runtime runs no Momor hooks
    api = next(v for v in resources.values() if v["Type"] == "AWS::ApiGateway::RestApi")
    body = json.dumps(api["Properties"]["Body"])
    for function in STREAMING:
        assert f"${{{function}.Arn}}" not in body and f"${{{function}Aliaslive}}" in body
    targets = {json.dumps(v["Properties"]["FunctionName"]) for v in resources.values()
               if v["Type"] == "AWS::Lambda::Permission"}
    assert not any(json.dumps({"Ref": f}) in targets for f in STREAMING)


# --- every deployment that changes what a function runs publishes a version --------------------------
#
# API Gateway invokes an aliased function's alias, so code or settings that reach $LATEST without a new
# version never reach a caller. SAM publishes one only when the version's logical id changes.

ALIASED = sorted(f for f in FUNCTIONS if "AutoPublishAlias" in props(f))
VERSION_KEY = "STACK_PARAMETERS"
"""The environment variable whose Fn::ToJsonString names every parameter an aliased function runs with."""
READINGS = {"the port": False, "its own functions only": True}
"""How AWS::LanguageExtensions may resolve (sam_translate.py): as SAM CLI's port does, every intrinsic it
can; or only its own functions, as its documentation promises (the rest reaching SAM as `Ref`s)."""


def version_ids(resources: dict[str, Any]) -> dict[str, str]:
    """Each aliased function's published version: the logical id its alias points at."""
    found = {}
    for function in ALIASED:
        alias = resources[f"{function}Alias{props(function)['AutoPublishAlias']}"]
        found[function] = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
        assert resources[found[function]]["Type"] == "AWS::Lambda::Version"
    return found


def parameters_in(value: Any, names: Any = None) -> set[str]:
    """Template parameters a value refers to (Ref, or ${Name} in a Sub)."""
    names = set(T["Parameters"]) if names is None else set(names)
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            return {value["Ref"]} & names
        if set(value) == {"Fn::Sub"}:
            text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
            return set(re.findall(r"\$\{([A-Za-z0-9]+)\}", text)) & names
        return set().union(*(parameters_in(v, names) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(parameters_in(v, names) for v in value))
    return set()


def reaching(template: dict[str, Any], function: str) -> set[str]:
    """Parameters that become something a function runs with: referenced from Globals' function
    settings, from the function's own properties (its role's policies included: a CatalogKey the role
    no longer allows would be read by the old version), or from the properties of a layer it uses.
    Its version key aside, which repeats them."""
    own = {k: v for k, v in template["Resources"][function]["Properties"].items()}
    own["Environment"] = {"Variables": {k: v for k, v in own.get("Environment", {}).get("Variables", {}).items()
                                        if k != VERSION_KEY}}
    globals_ = template.get("Globals", {}).get("Function", {})
    layers = [layer["Ref"] for layer in [*globals_.get("Layers", []), *own.get("Layers", [])] if "Ref" in layer]
    names = template["Parameters"]
    found = parameters_in(globals_, names) | parameters_in(own, names)
    for layer in layers:
        found |= parameters_in(template["Resources"][layer].get("Properties", {}), names)
    return found


def another_value(name: str) -> str:
    spec = T["Parameters"][name]
    default = spec.get("Default")
    if "AllowedValues" in spec:
        return str(next(v for v in spec["AllowedValues"] if str(v) != str(default)))
    if spec["Type"] == "Number":
        return str(int(default) + 1)
    return f"{default}-changed"


@pytest.fixture(scope="module")
def given_to_sam() -> dict[str, Any]:
    """The template as SAM is given it when AWS::LanguageExtensions resolves only its own functions:
    Fn::ForEach expanded (template.yaml writes the streaming functions as one), Refs kept."""
    return translated(only_its_own=True, before_sam=True)


@pytest.mark.sam
def test_an_aliased_function_names_every_parameter_it_runs_with_in_its_version_key(given_to_sam):
    """What SAM hashes must carry each parameter's value: the function's STACK_PARAMETERS, an
    Fn::ToJsonString the transform resolves to text, names exactly the parameters that reach it (a
    parameter added to Globals, to a streaming function or to a layer fails here until it is listed).
    Read from the expanded template, so it holds however the functions are written out."""
    resources = given_to_sam["Resources"]
    aliased = sorted(k for k, v in resources.items()
                     if v["Type"] == "AWS::Serverless::Function" and "AutoPublishAlias" in v["Properties"])
    assert set(STREAMING) <= set(aliased)
    defaults = {name: spec.get("Default") for name, spec in T["Parameters"].items()}
    for function in aliased:
        p = resources[function]["Properties"]
        assert p.get("AutoPublishAliasAllProperties") is True, f"{function}: add AutoPublishAliasAllProperties: true"
        assert p.get("VersionDeletionPolicy") == "Delete", f"{function}: add VersionDeletionPolicy: Delete"
        key = p.get("Environment", {}).get("Variables", {}).get(VERSION_KEY)
        assert isinstance(key, str), f"{function}: {VERSION_KEY} must be an Fn::ToJsonString of its parameters: {key}"
        names = reaching(given_to_sam, function)
        assert {"LogLevel", "CatalogKey", "RecordTtlDays", "SnapStart", "Architecture"} <= names, names
        assert json.loads(key) == {name: defaults[name] for name in sorted(names)}, (
            f"{function}: {VERSION_KEY} must name exactly {sorted(names)}, each a !Ref")
        assert not [n for n in names if T["Parameters"][n].get("NoEcho")], "a NoEcho value would sit in the env"


@pytest.mark.sam
@pytest.mark.parametrize("reading", sorted(READINGS))
def test_every_parameter_a_function_runs_with_publishes_new_versions_and_no_other_does(reading):
    """Each parameter that reaches an aliased function (log level, catalog key, TTLs, SnapStart,
    architecture...) changes its version id, translated as CloudFormation resolves the transforms
    (either reading of AWS::LanguageExtensions, sam_translate.py); SAM alone hashes `{"Ref": ...}`
    (serverless-application-model issue 3820). A parameter that reaches none (the stage, log retention)
    publishes nothing: each new version costs a SnapStart snapshot."""
    assert set(STREAMING) <= set(ALIASED)
    names = sorted(T["Parameters"])
    baseline, *changed = translated_many([{}] + [{name: another_value(name)} for name in names],
                                         only_its_own=READINGS[reading])
    before = version_ids(baseline["Resources"])
    reached = {function: reaching(T, function) for function in ALIASED}
    assert any(reached.values())
    for name, translation in zip(names, changed, strict=True):
        after = version_ids(translation["Resources"])
        kept = [f for f in ALIASED if name in reached[f] and after[f] == before[f]]
        assert not kept, f"{name} changed, yet {kept} would keep their published version"
        needless = [f for f in ALIASED if name not in reached[f] and after[f] != before[f]]
        assert not needless, f"{name} reaches none of {needless}, yet they would publish a version"


FOREACH_TEMPLATE = """\
Transform: [AWS::LanguageExtensions, AWS::Serverless-2016-10-31]
Parameters:
  LogLevel: {Type: String, Default: INFO}
Resources:
  Fn::ForEach::Streaming:
    - Name
    - [Models, Messages]
    - ${Name}Function:
        Type: AWS::Serverless::Function
        Properties:
          Runtime: python3.13
          Handler: app.handler
          InlineCode: "handler = None"
          AutoPublishAlias: live
          AutoPublishAliasAllProperties: true
          Environment:
            Variables:
              POWERTOOLS_SERVICE_NAME: !Sub momor-${Name}
              POWERTOOLS_LOG_LEVEL: !Ref LogLevel
              STACK_PARAMETERS:
                Fn::ToJsonString:
                  LogLevel: !Ref LogLevel
"""


@pytest.mark.sam
@pytest.mark.parametrize("reading", sorted(READINGS))
def test_the_version_key_works_for_functions_written_by_fn_foreach(tmp_path, reading):
    """The streaming functions are one Fn::ForEach definition (issue 40): the same STACK_PARAMETERS
    in its body publishes a new version of each function it writes out (a loop of two, on its own)."""
    template = tmp_path / "template.yaml"
    template.write_text(FOREACH_TEMPLATE)
    before, after = translated_many([{}, {"LogLevel": "DEBUG"}], only_its_own=READINGS[reading], template=template)
    for function in ("ModelsFunction", "MessagesFunction"):
        old, new = (r["Resources"][f"{function}Aliaslive"]["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
                    for r in (before, after))
        assert old != new, function
        assert after["Resources"][function]["Properties"]["Environment"]["Variables"][VERSION_KEY] == (
            '{"LogLevel":"DEBUG"}')


@pytest.fixture(scope="module")
def baseline_versions() -> dict[str, str]:
    return version_ids(translated()["Resources"])


@pytest.mark.sam
def test_a_new_memory_size_publishes_new_versions(tmp_path, baseline_versions):
    """Sizes are tuned from measurements (README "Function sizes"): a MemorySize changed in Globals,
    where the streaming functions take theirs, must reach the alias as a new version too."""
    text = rie.TEMPLATE.read_text()
    size = T["Globals"]["Function"]["MemorySize"]
    assert text.count(f"\n    MemorySize: {size}\n") == 1
    copy = tmp_path / "template.yaml"
    copy.write_text(text.replace(f"\n    MemorySize: {size}\n", f"\n    MemorySize: {size * 2}\n"))
    changed = version_ids(translated(template=copy)["Resources"])
    same = [f for f in ALIASED if "MemorySize" not in props(f) and changed[f] == baseline_versions[f]]
    assert not same, f"Globals MemorySize changed, yet {same} would keep their published version"


def _copy_with_change(source: Path, into: Path, changed: str | None) -> Path:
    folder = shutil.copytree(source, into, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    if changed is not None:
        target = folder / changed
        target.write_text(target.read_text() + "\n# changed\n")
    return folder


@pytest.mark.sam
@pytest.mark.parametrize(("layer", "source", "changed"), [
    ("MomorLayer", ROOT / "shared", "momor/__init__.py"),
    ("DependenciesLayer", ROOT / "infra" / "sam" / "layer", "requirements.txt"),
])
def test_a_layer_change_publishes_new_versions_and_nothing_changed_publishes_none(tmp_path, layer, source, changed):
    """All app code is in layers: a changed module of shared/momor, or other dependencies, must reach
    the alias. Packaged as `sam package` names it (after the folder's checksum)."""
    first = version_ids(translated(code={layer: _copy_with_change(source, tmp_path / "a", None)})["Resources"])
    again = version_ids(translated(code={layer: _copy_with_change(source, tmp_path / "b", None)})["Resources"])
    other = version_ids(translated(code={layer: _copy_with_change(source, tmp_path / "c", changed)})["Resources"])
    assert first == again, "the same content must not publish another version"
    assert all(other[f] != first[f] for f in ALIASED), (first, other)


@pytest.mark.sam
def test_replaced_versions_are_deleted(baseline_versions):
    """A version replaced by the next deployment's is deleted: with SnapStart each one kept would keep
    paying for its cached snapshot."""
    resources = translated()["Resources"]
    for version in baseline_versions.values():
        assert resources[version]["DeletionPolicy"] == "Delete"


@pytest.mark.sam
def test_the_api_has_only_its_declared_stage():
    """Without an OpenApiVersion SAM also deploys a stage named `Stage` (no tracing, yet invokable
    through the functions' `/*/` permissions). Read from SAM's own translation of the template."""
    resources = translated()["Resources"]
    stages = {k: v["Properties"] for k, v in resources.items() if v["Type"] == "AWS::ApiGateway::Stage"}
    assert [p["StageName"] for p in stages.values()] == [T["Parameters"]["Stage"]["Default"]]
    assert all(p["TracingEnabled"] is True for p in stages.values())
    deployments = [v["Properties"] for v in resources.values() if v["Type"] == "AWS::ApiGateway::Deployment"]
    assert deployments and not any("StageName" in p for p in deployments), deployments


# --- logs ------------------------------------------------------------------------------------------------


def _lambda_functions(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in resources.items() if v["Type"] == "AWS::Lambda::Function"}


@pytest.mark.sam
def test_every_function_keeps_lambdas_own_lines_in_its_own_group_for_log_retention_days():
    """START/REPORT (duration, memory, init and restore time) are INFO system events: SystemLogLevel
    WARN dropped them. Each function writes to its own log group, kept LogRetentionDays (default 30)."""
    assert T["Parameters"]["LogRetentionDays"]["Default"] == 30
    for retention, resources in ((30, translated()["Resources"]), (7, translated("LogRetentionDays=7")["Resources"])):
        functions = _lambda_functions(resources)
        assert sorted(functions) == sorted(FUNCTIONS)
        groups = set()
        for name, p in functions.items():
            config = p["LoggingConfig"]
            assert config["LogFormat"] == "JSON" and config["SystemLogLevel"] == "INFO", name
            group = config["LogGroup"]["Ref"]
            assert resources[group]["Type"] == "AWS::Logs::LogGroup" and "Condition" not in resources[group]
            assert str(resources[group]["Properties"]["RetentionInDays"]) == str(retention), name
            groups.add(group)
        assert len(groups) == len(functions), "each function its own group"


def _stage(resources: dict[str, Any]) -> dict[str, Any]:
    [stage] = [v["Properties"] for v in resources.values() if v["Type"] == "AWS::ApiGateway::Stage"]
    return stage


@pytest.mark.sam
def test_api_access_logs_are_an_option_off_by_default():
    assert T["Parameters"]["ApiAccessLogs"]["Default"] == "false"
    off = translated()["Resources"]
    assert "AccessLogSetting" not in _stage(off)
    # What turning them on creates exists only under the condition (CloudFormation skips it when off).
    for logical_id in ("ApiAccessLogGroup", "ApiGatewayLoggingRole", "ApiGatewayAccount"):
        assert RESOURCES[logical_id]["Condition"] == "AccessLogsOn", logical_id
    on = translated("ApiAccessLogs=true", "LogRetentionDays=14")["Resources"]
    setting = _stage(on)["AccessLogSetting"]
    assert setting["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    assert str(on["ApiAccessLogGroup"]["Properties"]["RetentionInDays"]) == "14"
    line = json.loads(setting["Format"])
    assert line["requestId"] == "$context.requestId" and line["status"] == "$context.status"
    assert not [v for v in line.values() if "authorization" in v.lower()]
    role = on["ApiGatewayAccount"]["Properties"]["CloudWatchRoleArn"]
    assert role == {"Fn::GetAtt": ["ApiGatewayLoggingRole", "Arn"]}


# --- the console's files through API Gateway ------------------------------------------------------------


@pytest.mark.sam
@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "shared" / "momor" / "console").iterdir()
                                         if p.is_file()))
def test_console_files_reach_the_browser_as_they_are(name):
    """The REST API declares no binary media types, so it passes a Lambda proxy answer's body on as
    text: an answer marked base64 reached the browser as base64 (the favicon did). Every console
    file must leave the function as its own text, through the handler API Gateway calls."""
    assert "BinaryMediaTypes" not in props("MomorApi") and "BinaryMediaTypes" not in T["Globals"]["Api"]
    app = importlib.import_module("functions.usage.app")
    event = rie.api_event("rest", "GET", f"/console/{name}", resource="/console/{name}",
                          path_parameters={"name": name})
    answer = app.handler(event, None)
    assert answer["statusCode"] == 200, answer
    assert answer["isBase64Encoded"] is False, f"{name} would reach the browser base64 encoded"
    assert answer["body"] == (ROOT / "shared" / "momor" / "console" / name).read_text()


# --- the README's deployment steps ---------------------------------------------------------------------


def _deploy_section() -> str:
    return section("Deploying to AWS")


def test_the_readme_deploy_steps_name_what_the_stack_and_the_repository_have():
    """A newcomer follows these literally: the outputs they read exist, the files they copy exist,
    every parameter is explained, and the catalog they upload names real providers, not the fakes."""
    section = _deploy_section()
    outputs = re.findall(r"\$\(out (\w+)\)", section)
    assert {"ApiUrl", "CatalogBucketName", "ProviderKeysSecretArn", "ApiKeysTableName"} <= set(outputs)
    assert set(outputs) <= set(T["Outputs"]), "an output the stack does not have"
    for path in set(re.findall(r"(infra/[\w./-]+\.(?:json|py|sh))", section)):
        assert (ROOT / path).is_file(), path
    missing = [name for name in T["Parameters"] if f"`{name}`" not in section]
    assert not missing, f"parameters the README does not explain: {missing}"
    assert "cp infra/example-catalog.real.json my-catalog.json" in section
    real = json.loads((ROOT / "infra" / "example-catalog.real.json").read_text())
    for provider in real["providers"]:
        url = provider["baseUrl"]
        host = re.sub(r"\{[^}]+\}", "x", url.split("/")[2]).split(":")[0]
        assert url.startswith("https://") and host not in ("127.0.0.1", "localhost") and "." in host, provider
    capabilities = tomllib.loads((ROOT / "samconfig.toml").read_text())["default"]["deploy"]["parameters"]
    assert "CAPABILITY_AUTO_EXPAND" in capabilities["capabilities"]  # the LanguageExtensions transform
    assert "AWS::LanguageExtensions" in T["Transform"]
    usage = subprocess.run([sys.executable, "-m", "infra.create_api_key", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60).stdout
    assert "--region" in usage and "--table" in usage


def _readme_section(title: str) -> str:
    return section(title.lstrip("# "))


@pytest.mark.sam
def test_the_readme_teardown_lists_what_the_stack_keeps_and_deletes_it():
    """`sam delete` leaves every resource whose DeletionPolicy is Retain (read from the translated
    template, SAM's own resources included): the README's list names exactly those, says the others it
    names go, and its commands read each kept table's name before the stack goes and delete it after."""
    resources = translated()["Resources"]
    retained = {k for k, v in resources.items() if v.get("DeletionPolicy") == "Retain"}
    assert retained == {k for k, v in resources.items() if v.get("UpdateReplacePolicy") == "Retain"}, (
        "a resource kept when the stack goes must be kept when an update replaces it, and the other way")
    section = _readme_section("### Tearing down")
    intro, _, rest = section.partition("What holds data is kept")
    listed = rest[:rest.index("```")]
    named = {name for name in re.findall(r"`(\w+)`", listed) if name in resources}
    assert named == retained, f"the README lists {sorted(named)}; the template keeps {sorted(retained)}"
    gone = {name for name in re.findall(r"`(\w+)`", intro) if name in resources}
    assert gone and not gone & retained, gone
    script = rest[rest.index("```sh"):]
    tables = {k for k in retained if resources[k]["Type"] == "AWS::DynamoDB::Table"}
    [loop] = re.findall(r"for t in ([\w ]+); do kept \$t; done", script)
    assert set(loop.split()) == tables
    assert "delete-table" in script and script.index("sam delete") > script.index("kept $t")
    for kind, command in (("AWS::S3::Bucket", "delete-bucket"), ("AWS::SecretsManager::Secret", "delete-secret")):
        for name in (k for k in retained if resources[k]["Type"] == kind):
            assert f"kept {name})" in script and command in script, name


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


def _api_path(path: str) -> str:
    """A Starlette route's path as API Gateway writes it: `{name:path}` is the greedy `{id+}`."""
    return re.sub(r"\{[^}:]+:path\}", "{id+}", re.sub(r"\{[^}:]+\}", "{}", path))


def _reaches(api_path: str, path: str) -> bool:
    """Whether API Gateway's `api_path` answers `path` (a literal, or one written by `_api_path`)."""
    pattern = "/".join(".+" if part.endswith("+}") else "[^/]+" if part.startswith("{") else re.escape(part)
                       for part in api_path.split("/"))
    return re.fullmatch(pattern, path) is not None


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_route_a_function_serves_is_on_the_api(monkeypatch, function):
    """Each function's own app, read: every (method, path) it mounts reaches it through API Gateway,
    so a route added in code and not in the template (the router alias's models list once) is caught."""
    monkeypatch.setenv("MOMOR_CATALOG_FILE", "/nonexistent/catalog.json")  # no app reads it when built
    app = importlib.import_module(f"functions.{FOLDERS[function]}.app").app
    served = {(m.lower(), _api_path(r.path)) for r in app.router.routes for m in (r.methods or ()) if m != "HEAD"}
    missing = [(m, p) for m, p in sorted(served)
               if not any(p == o or p.startswith(o + "/") for o in LOCAL_ONLY)
               and not any(m == am and _reaches(ap, p) for am, ap, f, _ in ROUTES if f == function)]
    assert not missing


LOCAL_ONLY = ("/responses",)
"""Paths a function's app mounts that only the local server answers (the README says so: the
Responses route's unversioned alias); every other route it mounts must be on the API."""


@pytest.mark.parametrize(("method", "path", "function", "streamed"), ROUTES)
def test_route_integration(method, path, function, streamed):
    integration = PATHS[path][method]["x-amazon-apigateway-integration"]
    assert integration["type"] == "aws_proxy" and integration["httpMethod"] == "POST"
    uri = sub_text(integration["uri"])
    if streamed:  # the published version (alias `live`), for SnapStart
        assert integration["responseTransferMode"] == "STREAM"
        assert uri == ("arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2021-11-15/functions/"
                       f"${{{function}Aliaslive}}/response-streaming-invocations")
    else:
        assert integration.get("responseTransferMode", "BUFFERED") == "BUFFERED"
        assert uri == ("arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/"
                       f"${{{function}.Arn}}/invocations")


@pytest.mark.parametrize(("method", "path", "function", "streamed"), ROUTES)
def test_route_invoke_permission(method, path, function, streamed):
    route = re.sub(r"\{[^}]+\}", "*", path)
    target = f"{function}Aliaslive" if streamed else function
    matching = [
        p for p in of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Ref": target}
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
        for key in ("Tracing", "Layers"):
            assert key not in p, f"{function} overrides Globals {key}"
        # The streaming loop states Globals' Runtime again (cfn-lint checks a loop's functions without
        # Globals, W2533): it must stay the same, or Globals would no longer decide it.
        assert p.get("Runtime", glob_fn["Runtime"]) == glob_fn["Runtime"], f"{function} overrides Globals Runtime"
        # A streaming function's Handler refuses to load (the stock runtime must not answer it).
        assert p.get("Handler", "app.handler") == (UNWRAPPED if function in STREAMING else "app.handler")


def test_layers():
    momor = props("MomorLayer")
    assert momor["ContentUri"].rstrip("/") == "shared"
    assert props("DependenciesLayer")["ContentUri"].rstrip("/") == "infra/sam/layer"
    for layer in ("MomorLayer", "DependenciesLayer"):
        assert RESOURCES[layer]["Metadata"]["BuildMethod"] == "makefile"  # it compiles the bytecode too
        assert props(layer)["CompatibleRuntimes"] == ["python3.13"]


def test_arm64_by_default_and_x86_64_one_parameter_away():
    """Every function and the dependency layer follow the Architecture parameter (Graviton by default),
    each function stating it itself (a Globals parameter would not count in its version id, which
    test_every_parameter_a_function_runs_with_publishes_new_versions checks)."""
    spec = T["Parameters"]["Architecture"]
    assert spec["Default"] == "arm64" and sorted(spec["AllowedValues"]) == ["arm64", "x86_64"]
    assert "Architectures" not in T["Globals"]["Function"]
    for function in FUNCTIONS:
        assert props(function)["Architectures"] == [{"Ref": "Architecture"}], function
    deps = RESOURCES["DependenciesLayer"]
    assert deps["Properties"]["CompatibleArchitectures"] == [{"Ref": "Architecture"}]
    assert deps["Metadata"]["BuildArchitecture"] == {"Ref": "Architecture"}
    # SAM CLI runs the Makefile in ContextPath: one folder per allowed value, each setting its ARCH.
    assert sub_text(deps["Metadata"]["ContextPath"]) == "infra/sam/layer/${Architecture}"
    for value in spec["AllowedValues"]:
        makefile = (ROOT / "infra" / "sam" / "layer" / value / "Makefile").read_text()
        assert f"ARCH = {value}\n" in makefile and "../layer.mk" in makefile
    # The momor layer is pure Python: the same build serves either architecture.
    assert sorted(props("MomorLayer")["CompatibleArchitectures"]) == ["arm64", "x86_64"]


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
    assert callable(app.handler)  # Mangum's handler stays for running the app buffered by hand
    assert props(function)["Timeout"] > T["Globals"]["Function"]["Timeout"]


@pytest.mark.parametrize("function", BUFFERED)
def test_buffered_functions_run_the_stock_runtime(function):
    env = props(function).get("Environment", {}).get("Variables", {})
    assert "AWS_LAMBDA_EXEC_WRAPPER" not in env and "MOMOR_ASGI_APP" not in env
    assert "AWS_LAMBDA_EXEC_WRAPPER" not in T["Globals"]["Function"]["Environment"]["Variables"]


def test_tables():
    records = props("RecordsTable")
    assert records["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    # The usage indexes are the ones infra/emulators.py creates locally (momor.usage), field for field.
    attributes, indexes = usage.index_definitions()
    assert records["AttributeDefinitions"] == [{"AttributeName": "id", "AttributeType": "S"}, *attributes]
    assert records["GlobalSecondaryIndexes"] == indexes
    assert records["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    keys = props("ApiKeysTable")
    assert keys["KeySchema"] == [{"AttributeName": "keyHash", "KeyType": "HASH"}]
    # Memory: one item per turn (store/memory.py), the thread's key and a time-ordered turn id; the
    # env names it, and the one-item-per-thread table it replaced is kept (Retain) but unused.
    memory = props("MemoryTurnsTable")
    assert memory["KeySchema"] == [{"AttributeName": "threadKey", "KeyType": "HASH"},
                                   {"AttributeName": "turn", "KeyType": "RANGE"}]
    assert memory["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert T["Globals"]["Function"]["Environment"]["Variables"]["MOMOR_MEMORY_TABLE"] == {"Ref": "MemoryTurnsTable"}
    # Stored responses (store/responses.py): one item per response, keyed by caller and response id.
    stored = props("ResponsesTable")
    assert stored["KeySchema"] == [{"AttributeName": "responseKey", "KeyType": "HASH"}]
    assert stored["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert T["Globals"]["Function"]["Environment"]["Variables"]["MOMOR_RESPONSES_TABLE"] == {"Ref": "ResponsesTable"}
    # The response cache (store/cache.py): one item per kept answer (or input's vector), by scope and hash.
    kept = props("CacheTable")
    assert kept["KeySchema"] == [{"AttributeName": "cacheKey", "KeyType": "HASH"}]
    assert kept["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert T["Globals"]["Function"]["Environment"]["Variables"]["MOMOR_CACHE_TABLE"] == {"Ref": "CacheTable"}
    assert RESOURCES["CacheTable"]["DeletionPolicy"] == "Retain"
    for table in ("RecordsTable", "ApiKeysTable", "MemoryTurnsTable", "MemoryTable", "ResponsesTable"):
        p = props(table)
        assert p["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert p["BillingMode"] == "PAY_PER_REQUEST"
        assert RESOURCES[table]["DeletionPolicy"] == "Retain"


@pytest.mark.sam
def test_tables_use_the_free_aws_owned_key_unless_told_otherwise():
    """SSEEnabled true is the account's AWS-managed KMS key (billed per request); false is the free
    AWS-owned key, the default here. Every table of the template (the router's memory turns had been
    left on the KMS key whatever TableKey said)."""
    assert T["Parameters"]["TableKey"]["Default"] == "AwsOwned"
    tables = sorted(of_type("AWS::DynamoDB::Table"))
    assert {"RecordsTable", "ApiKeysTable", "MemoryTurnsTable", "ResponsesTable"} <= set(tables)
    for overrides, enabled in (((), False), (("TableKey=AwsManaged",), True)):
        resources = translated(*overrides)["Resources"]
        for table in tables:
            assert resources[table]["Properties"]["SSESpecification"] == {"SSEEnabled": enabled}, (table, overrides)


def test_bucket_and_secret():
    bucket = props("CatalogBucket")
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert RESOURCES["ProviderKeysSecret"]["Type"] == "AWS::SecretsManager::Secret"
    assert props("ProviderKeysSecret")["SecretString"] == "{}"  # parses as "no saved keys"


def test_the_cache_bucket_is_encrypted_private_tls_only_and_expires_after_the_longest_ttl():
    bucket = props("CacheBucket")
    [encryption] = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert all(bucket["PublicAccessBlockConfiguration"].values()) and len(bucket["PublicAccessBlockConfiguration"]) == 4
    [rule] = bucket["LifecycleConfiguration"]["Rules"]
    longest = next(f.default for f in fields(Config) if f.name == "cache_max_ttl")  # MOMOR_CACHE_MAX_TTL_S
    assert rule["Status"] == "Enabled" and rule["ExpirationInDays"] == -(-longest // 86400)
    assert "Prefix" not in rule and "Filter" not in rule  # every object
    policy = props("CacheBucketPolicy")
    assert policy["Bucket"] == {"Ref": "CacheBucket"}
    [deny] = policy["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Principal"] == "*" and deny["Action"] == "s3:*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert {"Fn::GetAtt": ["CacheBucket", "Arn"]} in deny["Resource"]
    assert {"Fn::Sub": "${CacheBucket.Arn}/*"} in deny["Resource"]
    env = T["Globals"]["Function"]["Environment"]["Variables"]
    assert env["MOMOR_CACHE_BUCKET"] == {"Ref": "CacheBucket"}


# --- least privilege, derived from the code ---------------------------------------------------------
#
# aws_usage reads every S3, DynamoDB and Secrets Manager call in the package and what each Lambda's
# entry modules can reach; the template must grant each function exactly what its reachable calls
# need, on the resource their settings name, and a call that only ever touches keys with a literal
# head (the rate-limit windows, `rate#...`) must be granted only on those keys.

SETTING_ENV = {f.name: env_var(f.name) for f in fields(Config)}
SITES = aws_usage.call_sites(SETTING_ENV)
LEADING_KEYS = "dynamodb:LeadingKeys"


def entry_modules(function: str) -> list[str]:
    entries = [f"functions.{FOLDERS[function]}.app"]
    if function in STREAMING:  # what lambda_bootstrap.sh starts
        entries.append("momor.lambda_stream.__main__")
    return entries


def needs(function: str) -> list[aws_usage.Site]:
    reached = aws_usage.reachable(entry_modules(function))
    return [site for site in SITES if site.function in reached]


def resource_of(site: aws_usage.Site) -> Any:
    """The template's resource for a call: the ARN of what its settings' env vars name."""
    env = T["Globals"]["Function"]["Environment"]["Variables"]
    if site.service == "comprehend":
        return "*"
    if site.service == "bedrock-runtime":
        return {"Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:guardrail/*"}
    refs = {name: env[SETTING_ENV[name]]["Ref"] for name in site.settings}
    assert refs, f"{site}: cannot tell which resource it touches (its module reads no settings field)"
    if site.service == "dynamodb":
        assert len(refs) == 1, f"{site}: its module reads several tables ({sorted(refs)}); say which"
        table = refs.popitem()[1]
        if site.operation == "Query" and site.on_index:  # usage.py queries the records' indexes
            return {"Fn::Sub": f"${{{table}.Arn}}/index/*"}
        return {"Fn::GetAtt": [table, "Arn"]}
    if site.service == "s3":
        bucket = next(r for n, r in refs.items() if n.endswith("_bucket"))
        key = next((r for n, r in refs.items() if n.endswith("_key")), None)  # None: any of its objects
        return {"Fn::Sub": f"arn:${{AWS::Partition}}:s3:::${{{bucket}}}/{f'${{{key}}}' if key else '*'}"}
    assert len(refs) == 1, site
    if site.service == "sqs":  # the setting holds the queue's URL (its Ref); IAM names its ARN
        return {"Fn::GetAtt": [refs.popitem()[1], "Arn"]}
    return {"Ref": refs.popitem()[1]}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def key_patterns(statement: dict[str, Any]) -> list[str] | None:
    """The LeadingKeys patterns a statement is restricted to, or None when it is not restricted."""
    condition = statement.get("Condition")
    if condition is None:
        return None
    assert list(condition) == ["ForAllValues:StringLike"], f"unexpected condition {condition}"
    assert list(condition["ForAllValues:StringLike"]) == [LEADING_KEYS], condition
    return _as_list(condition["ForAllValues:StringLike"][LEADING_KEYS])


def allows(statement: dict[str, Any], site: aws_usage.Site) -> bool:
    if site.action not in _as_list(statement["Action"]) or resource_of(site) not in _as_list(statement["Resource"]):
        return False
    patterns = key_patterns(statement)
    if patterns is None:
        return True
    # `rate#*` covers every key a call can touch only if each key starts with the pattern's head.
    return site.key_prefix is not None and any(
        p.endswith("*") and "*" not in p[:-1] and "?" not in p and site.key_prefix.startswith(p[:-1])
        for p in patterns
    )


def test_the_code_scan_finds_every_kind_of_call():
    """The derivation itself: boto3 calls and the signed-HTTP DynamoDB path are both seen."""
    found = {(site.action, site.function.rsplit(":", 1)[-1]) for site in SITES}
    assert ("dynamodb:PutItem", "_put") in found  # dynamo.call("PutItem", ...): records' put (a deferred.py step)
    assert ("dynamodb:UpdateItem", "_count_in_table") in found  # a boto3 client held in a local
    assert {site.service for site in SITES} == {"s3", "dynamodb", "secretsmanager", "sqs", "comprehend",
                                                  "bedrock-runtime", "sts", "cognito-idp"}
    assert all(site.settings for site in SITES if site.service not in aws_usage.RESOURCELESS), [
        str(s) for s in SITES if not s.settings and s.service not in aws_usage.RESOURCELESS]
    assert any(site.key_prefix == "rate#" for site in SITES)
    assert not aws_usage.unreadable_calls()


UNREADABLE = {
    "a client of another service": 'import boto3\n\ndef f():\n    boto3.client("sns").publish(TopicArn="t")\n',
    "a lean client of another service": ('from .store import aws\n\ndef f():\n'
                                         '    aws.lean_client("sns").publish(TopicArn="t")\n'),
    "a service chosen at run time": 'from .store import aws\n\ndef make(name):\n    return aws.client(name)\n',
    "the resource API": 'import boto3\n\ndef f():\n    boto3.resource("dynamodb").Table("t").get_item(Key={})\n',
    "a paginator": 'from .store import aws\n\ndef f():\n    aws.client("dynamodb").get_paginator("query")\n',
    "a client kept on an object": ('from .store import aws\n\nclass C:\n    def __init__(self):\n'
                                   '        self.db = aws.client("dynamodb")\n'),
    "a client returned": 'from .store import aws\n\ndef db():\n    return aws.client("dynamodb")\n',
    "a request signed for another service": ('from .store import sigv4\n\ndef f(c):\n    return sigv4.sign('
                                             '"POST", "https://sts", {}, b"", service="sts", region="r", '
                                             'credentials=c)\n'),
    "a forwarded signature outside a boto3-named method": ('from .store import aws\n\ndef f():\n    return aws._signed('
                                                           '"s3", "GET", "https://x", {}, b"", timeout=1.0)\n'),
    "a DynamoDB operation chosen at run time": ('from .store import dynamo\n\nasync def f(op):\n'
                                                '    return await dynamo.call(op, {})\n'),
    "an X-Amz-Target of its own": ('def f():\n'
                                   '    return {"X-Amz-Target": "STS.GetCallerIdentity"}\n'),
}


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    package = tmp_path_factory.mktemp("scan") / "shared"
    shutil.copytree(ROOT / "shared" / "momor", package / "momor",
                    ignore=shutil.ignore_patterns("__pycache__", "console"))
    assert not aws_usage.unreadable_calls(package)  # the copy itself reads clean
    return package


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_the_code_scan_refuses_a_call_it_cannot_read(package_copy, case):
    """The scan must fail on an AWS call it does not recognise, or a new call would pass this test and
    meet AccessDenied on AWS. A copy of the package, with one module added making that call."""
    package = package_copy
    (package / "momor" / "extra.py").write_text(UNREADABLE[case])
    aws_usage.modules.cache_clear()
    found = aws_usage.unreadable_calls(package)
    assert len(found) == 1 and found[0].startswith("momor.extra:"), found


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_aws_call_a_function_can_make_is_granted(function):
    granted = statements(function)
    assert not templates(function), "grant with explicit statements, which this test can read"
    missing = [str(site) for site in needs(function) if not any(allows(s, site) for s in granted)]
    assert not missing, f"{function} is not granted: {missing}"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_nothing_is_granted_that_no_reachable_call_needs(function):
    sites = needs(function)
    for statement in statements(function):
        assert statement["Effect"] == "Allow"
        for action in _as_list(statement["Action"]):
            assert "*" not in action, action
            for resource in _as_list(statement["Resource"]):
                used = [s for s in sites if s.action == action and resource_of(s) == resource]
                assert used, f"{function}: {action} on {resource} is granted but no call it can make needs it"
                assert any(allows(statement, s) for s in used), f"{function}: {statement} allows none of {used}"
                if all(s.key_prefix for s in used):  # every call touches only keys with a known head
                    heads = sorted({f"{s.key_prefix}*" for s in used})
                    assert key_patterns(statement) == heads, (
                        f"{function}: {action} on {resource} must be restricted to {LEADING_KEYS} {heads}"
                    )


def test_rate_limit_windows_are_counted_by_every_function_that_admits():
    """The issue's case, stated plainly: the limiter's UpdateItem reaches every function that routes
    calls (the streaming ones, the decision and transcription routes among them), and, since every
    authenticated route is rate limited (issue 33, api/route_limits.py), every buffered one too: the
    records, the catalog's models and usage with the key API."""
    assert {"DecisionFunction", "TranscribeFunction"} <= set(STREAMING)
    for function in [*STREAMING, *BUFFERED]:
        assert any(s.action == "dynamodb:UpdateItem" and s.key_prefix == "rate#" for s in needs(function)), function
