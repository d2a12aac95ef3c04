"""Run a Momor function the way Lambda does, on this host: SAM CLI's Runtime Interface Emulator.

`sam local invoke` needs Docker; these machines have none. SAM CLI ships the emulator binary
(samcli/local/rapid/aws-lambda-rie-*), which runs any command as the function's runtime, so the
function runs here under the real runtime client (`python -m awslambdaric app.handler`) and is
invoked over the emulator's HTTP API with API Gateway events from `sam local generate-event`.

    build = sam_build()                                   # once per process (about 30 s)
    env = function_env("ModelsFunction") | {...}          # the template's own values, plus yours
    with LambdaFunction.from_build(build, "ModelsFunction", env) as fn:
        event = api_event("rest", "POST", "/models", headers={...}, body={...})
        answer = fn.invoke(event)                         # Answer(status, headers, body)

`from_build(..., streaming=True)` runs what AWS_LAMBDA_EXEC_WRAPPER starts on Lambda instead of the
stock client (`python -m momor.lambda_stream app:app`); the emulator takes the streamed response and
returns it whole, so this checks what is said, not when. `LambdaFunction(source_dir(id), env)` runs
a source folder unbuilt (momor and its dependencies from this venv). Everything listens on
127.0.0.1 ports picked at start; `function_env` leaves resource names (tables, bucket, secret) to
the caller: `infra.emulators.provision` returns them.

Import it from a test in tests/lambda with `from . import rie` (`lambda` is a keyword, so an
absolute import has to be `importlib.import_module("tests.lambda.rie")`).
"""

from __future__ import annotations

import atexit
import base64
import copy
import functools
import glob
import importlib.util
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from infra import template_loops

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
SAM_VENV = ROOT / ".sam-venv"
LAYERS = ("DependenciesLayer", "MomorLayer")
"""The layers every function gets (template Globals), in the order Lambda stacks them."""
EXEC_WRAPPER = "AWS_LAMBDA_EXEC_WRAPPER"
START_TIMEOUT = 30.0
INVOKE_TIMEOUT = 60.0

EventKind = Literal["rest", "http"]
_GENERATE = {"rest": "aws-proxy", "http": "http-api-proxy"}
"""`sam local generate-event apigateway <name>`: the REST API (v1) and HTTP API (v2) proxy shapes."""


class HarnessError(RuntimeError):
    """A tool is missing or a process did not start; the message says what to install or read."""


# --- tools ------------------------------------------------------------------------------------


def sam_executable() -> str:
    """SAM CLI: $SAM_CLI, else the project's .sam-venv, else `sam` on PATH."""
    for candidate in (os.environ.get("SAM_CLI"), str(SAM_VENV / "bin" / "sam"), shutil.which("sam")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise HarnessError(
        "SAM CLI not found: python3.13 -m venv .sam-venv && .sam-venv/bin/pip install aws-sam-cli"
    )


def rie_binary() -> Path:
    """The emulator binary SAM CLI ships for this machine's architecture ($MOMOR_RIE overrides)."""
    if os.environ.get("MOMOR_RIE"):
        return Path(os.environ["MOMOR_RIE"])
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine().lower()]
    sam = Path(sam_executable()).resolve()
    patterns = [
        str(sam.parent.parent / "lib" / "python3*" / "site-packages" / "samcli" / "local" / "rapid"),
        str(SAM_VENV / "lib" / "python3*" / "site-packages" / "samcli" / "local" / "rapid"),
    ]
    for pattern in patterns:
        for rapid in sorted(glob.glob(pattern)):
            binary = Path(rapid) / f"aws-lambda-rie-{arch}"
            if binary.is_file():
                return binary
    raise HarnessError(f"aws-lambda-rie-{arch} not found inside SAM CLI's samcli/local/rapid")


def python313_bin() -> Path:
    """A directory holding a python3.13 for `sam build` (it refuses to build without one on PATH)."""
    found = shutil.which("python3.13")
    if found and "shims" not in found:
        return Path(found).parent
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    for root in filter(None, roots):
        for version in sorted(glob.glob(os.path.join(root, "versions", "3.13*")), reverse=True):
            if Path(version, "bin", "python3.13").exists():
                return Path(version, "bin")
    if found:
        return Path(found).parent
    raise HarnessError("python3.13 not found: `pyenv install 3.13` (sam build needs it on PATH)")


@functools.cache
def _sam_config_dir() -> Path:
    """SAM CLI's settings for this process: telemetry off and the weekly PyPI version check
    marked done, so a test run sends nothing anywhere."""
    folder = Path(tempfile.mkdtemp(prefix="momor-sam-config-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "metadata.json").write_text(json.dumps({"telemetryEnabled": False, "lastVersionCheck": time.time()}))
    return folder


def sam_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment to run SAM CLI in: python3.13 first on PATH, no telemetry, no AWS account."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join([str(python313_bin()), env.get("PATH", "")])
    env["SAM_CLI_TELEMETRY"] = "0"
    env["__SAM_CLI_APP_DIR"] = str(_sam_config_dir())
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] = "us-east-1"
    env.update(extra or {})
    return env


def run_sam(*args: str, timeout: float = 600, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run SAM CLI; the caller checks returncode (stdout and stderr are kept for its message)."""
    return subprocess.run(
        [sam_executable(), *args], cwd=cwd, env=sam_env(), capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


# --- sam build, once per process ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Build:
    dir: Path
    seconds: float
    output: str

    def artifact(self, logical_id: str) -> Path:
        return self.dir / logical_id

    def layer_paths(self) -> list[Path]:
        """What Lambda puts on sys.path from the layers: /opt/python (and its site-packages)."""
        return [self.dir / layer / "python" for layer in reversed(LAYERS)]


HOST_ARCHITECTURE = "x86_64"
"""What template.yaml's Architecture parameter must be for the build to run here (these machines are
x86_64; the template's default, arm64, makes a layer of aarch64 binaries this host cannot load)."""


@functools.cache
def sam_build(architecture: str = HOST_ARCHITECTURE) -> Build:
    """`sam build` of template.yaml into a temporary folder (removed at exit), for `architecture`
    (the template's Architecture parameter): by default this machine's, since every harness that
    runs the built functions runs them here. Cached per process and architecture."""
    folder = Path(tempfile.mkdtemp(prefix="momor-sam-build-"))
    atexit.register(shutil.rmtree, folder, True)
    started = time.monotonic()
    done = run_sam("build", "--template-file", str(TEMPLATE), "--build-dir", str(folder / "build"),
                   "--cache-dir", str(folder / "cache"), "--parameter-overrides", f"Architecture={architecture}")
    seconds = time.monotonic() - started
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise HarnessError(f"sam build failed ({done.returncode}) after {seconds:.0f} s:\n{output[-4000:]}")
    return Build(folder / "build", seconds, output)


# --- the template's own settings for a function -------------------------------------------------


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !Sub, !GetAtt ...) read as their long form."""


def _cfn_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _cfn_tag)


@functools.cache
def load_template_as_written(path: Path = TEMPLATE) -> dict[str, Any]:
    with open(path) as f:
        return yaml.load(f, Loader=_CfnLoader)  # a SafeLoader subclass: no arbitrary objects


@functools.cache
def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template with its Fn::ForEach loops written out (infra/template_loops.py): each resource a loop
    writes is there under its logical id, as a hand-written one would be."""
    return template_loops.expand(load_template_as_written(path))


_PAIRED = frozenset({"MOMOR_CATALOG_KEY"})
"""Set from a parameter but meaningful only with a resource (the bucket): left for the caller,
since MOMOR_CATALOG_KEY without MOMOR_CATALOG_BUCKET is a settings error (and so is it beside a
MOMOR_CATALOG_FILE)."""


def source_dir(logical_id: str, template: Mapping[str, Any] | None = None) -> Path:
    """The function's source folder (its CodeUri), to run it unbuilt: `LambdaFunction(source_dir(...))`
    with momor and its dependencies importable from this venv."""
    template = template or load_template()
    return ROOT / template["Resources"][logical_id]["Properties"]["CodeUri"]


def function_env(logical_id: str, template: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The function's environment as the template writes it (Globals, then its own), keeping values
    that need no deployment: literals, and Refs to parameters with a default. Resource names (tables,
    bucket, secret) are the caller's to give, and the exec wrapper is left out: it starts the
    streaming loop on the managed runtime, while here the emulator runs the command it is given."""
    template = template or load_template()
    params = {k: v.get("Default") for k, v in template.get("Parameters", {}).items()}
    variables: dict[str, Any] = {}
    globals_env = template.get("Globals", {}).get("Function", {}).get("Environment", {})
    variables.update(globals_env.get("Variables", {}))
    own = template["Resources"][logical_id]["Properties"].get("Environment", {})
    variables.update(own.get("Variables", {}))
    env = {}
    for name, value in variables.items():
        if isinstance(value, dict):
            ref = value.get("Ref")
            if name in _PAIRED and ref in params:
                continue
            if ref in params and params[ref] is not None:
                env[name] = str(params[ref])
        elif name != EXEC_WRAPPER:
            env[name] = str(value)
    return env


# --- API Gateway events -------------------------------------------------------------------------


@functools.cache
def _generated(kind: EventKind) -> str:
    done = run_sam("local", "generate-event", "apigateway", _GENERATE[kind], timeout=120)
    if done.returncode != 0:
        raise HarnessError(f"sam local generate-event failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def api_event(
    kind: EventKind,
    method: str,
    path: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    query: Mapping[str, str] | None = None,
    path_parameters: Mapping[str, str] | None = None,
    resource: str | None = None,
) -> dict[str, Any]:
    """An API Gateway proxy event from `sam local generate-event`, edited to this request.

    kind "rest" is the REST API's (payload v1, what template.yaml deploys); "http" is the HTTP API's
    (payload v2). Headers are exactly `headers` (the sample's browser headers are dropped: their
    Accept would make every JSON route answer 406). A dict or list body is sent as JSON text;
    bytes are sent base64 encoded, as API Gateway sends binary bodies.
    """
    event = copy.deepcopy(json.loads(_generated(kind)))
    given = dict(headers or {})
    given.setdefault("Host", "api.momor.test")
    text, is_b64 = _body(body)
    query = dict(query or {})
    if kind == "rest":
        event.update(
            httpMethod=method.upper(),
            path=path,
            resource=resource or path,
            headers=given,
            multiValueHeaders={k: [v] for k, v in given.items()},
            queryStringParameters=query or None,
            multiValueQueryStringParameters={k: [v] for k, v in query.items()} or None,
            pathParameters=dict(path_parameters) if path_parameters else None,
            stageVariables=None,
            body=text,
            isBase64Encoded=is_b64,
        )
        context = event["requestContext"]
        context.update(httpMethod=method.upper(), path=f"/{context.get('stage', 'prod')}{path}",
                       resourcePath=resource or path, requestId=_request_id())
    else:
        event.update(
            routeKey=f"{method.upper()} {resource or path}",
            rawPath=path,
            rawQueryString="&".join(f"{k}={v}" for k, v in query.items()),
            headers={k.lower(): v for k, v in given.items()},
            queryStringParameters=query or None,
            pathParameters=dict(path_parameters) if path_parameters else None,
            stageVariables=None,
            body=text,
            isBase64Encoded=is_b64,
        )
        event.pop("cookies", None)
        context = event["requestContext"]
        context["http"].update(method=method.upper(), path=path)
        context.update(routeKey=event["routeKey"], requestId=_request_id())
    return event


def _body(body: Any) -> tuple[str | None, bool]:
    if body is None:
        return None, False
    if isinstance(body, bytes):
        return base64.b64encode(body).decode("ascii"), True
    if isinstance(body, str):
        return body, False
    return json.dumps(body), False


def _request_id() -> str:
    return os.urandom(16).hex()


# --- the function under the emulator -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """A proxy integration's answer, decoded: what API Gateway would send the client."""

    status: int
    headers: dict[str, str]
    """Lower-cased names; multiValueHeaders joined with ", " as HTTP would."""
    body: bytes
    raw: dict[str, Any]

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def decode_answer(payload: Any) -> Answer:
    if not isinstance(payload, dict) or "statusCode" not in payload:
        raise AssertionError(f"not a proxy integration answer: {payload!r}"[:2000])
    headers = {k.lower(): str(v) for k, v in (payload.get("headers") or {}).items()}
    for name, values in (payload.get("multiValueHeaders") or {}).items():
        headers[name.lower()] = ", ".join(str(v) for v in values)
    for cookie in payload.get("cookies") or []:
        headers["set-cookie"] = cookie
    body = payload.get("body") or ""
    data = base64.b64decode(body) if payload.get("isBase64Encoded") else body.encode("utf-8")
    return Answer(int(payload["statusCode"]), headers, data, payload)


_RUNTIME_CLIENT = ("awslambdaric", "runtime_client", "simplejson", "snapshot_restore_py")
"""The stock runtime client and what it imports: what the managed runtime has in /var/runtime."""


@functools.cache
def runtime_client_dir() -> Path:
    """A folder holding only the runtime client (links into this venv), for a `python -S` function."""
    folder = Path(tempfile.mkdtemp(prefix="momor-runtime-"))
    atexit.register(shutil.rmtree, folder, True)
    for name in _RUNTIME_CLIENT:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise HarnessError(f"{name} is not installed: pip install awslambdaric (the dev extra has it)")
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        (folder / source.name).symlink_to(source, target_is_directory=source.is_dir())
    return folder


PRELUDE_END = b"\x00" * 8
"""Separates the JSON prelude (statusCode, headers) from the body in a streamed HTTP response."""


def decode_streamed(raw: bytes, log: Any = lambda: "") -> Answer:
    """A streamed `application/vnd.awslambda.http-integration-response`, as the emulator returns it."""
    prelude, sep, body = raw.partition(PRELUDE_END)
    if not sep:
        raise AssertionError(f"no prelude in the streamed reply: {raw[:500]!r}\n{log()}")
    try:
        meta = json.loads(prelude)
    except ValueError:
        raise AssertionError(f"the prelude is not JSON: {prelude[:500]!r}\n{log()}") from None
    if not isinstance(meta, dict) or "statusCode" not in meta:
        raise AssertionError(f"the prelude has no statusCode: {meta!r}")
    return decode_answer({**meta, "body": base64.b64encode(body).decode(), "isBase64Encoded": True})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LambdaFunction:
    """One function under the emulator: its own process, its own two ports, its own log file."""

    def __init__(
        self,
        code_dir: Path | str,
        env: Mapping[str, str] | None = None,
        *,
        handler: str = "app.handler",
        pythonpath: Iterable[Path | str] = (),
        command: list[str] | None = None,
        name: str = "function",
        timeout: int = 30,
        streaming: bool = False,
    ) -> None:
        self.code_dir = Path(code_dir)
        self.name = name
        self.command = command or [sys.executable, "-m", "awslambdaric", handler]
        self.pythonpath = [str(self.code_dir), *map(str, pythonpath)]
        self.env = dict(env or {})
        self.handler = handler
        self.timeout = timeout
        self.streaming = streaming
        """Replies are streamed HTTP integration responses (prelude, 8 NULs, body), not JSON."""
        self.port = 0
        self.log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def from_build(cls, build: Build, logical_id: str, env: Mapping[str, str] | None = None,
                   *, handler: str = "app.handler", streaming: bool = False, **kwargs: Any) -> LambdaFunction:
        """The built function with the built layers on its path, as /var/task and /opt/python, and
        nothing else but the runtime client (python -S: this venv's site-packages stay out, so an
        import the layers cannot satisfy fails here as it would on Lambda).

        streaming=True runs what the exec wrapper runs on the managed runtime instead of the stock
        client: `python -m momor.lambda_stream $MOMOR_ASGI_APP` (the emulator accepts the streamed
        response and hands it back whole: prelude, 8 NUL bytes, body; `invoke` decodes it)."""
        env = dict(env or {})
        if streaming:
            app = env.get("MOMOR_ASGI_APP") or function_env(logical_id).get("MOMOR_ASGI_APP")
            if not app:
                raise HarnessError(f"{logical_id} names no MOMOR_ASGI_APP: it is not a streaming function")
            env["MOMOR_ASGI_APP"] = app
            command = [sys.executable, "-S", "-m", "momor.lambda_stream", app]
        else:
            command = [sys.executable, "-S", "-m", "awslambdaric", handler]
        path = [*build.layer_paths(), runtime_client_dir()]
        return cls(build.artifact(logical_id), env, pythonpath=path, command=command, handler=handler,
                   name=logical_id, streaming=streaming, **kwargs)

    def _process_env(self) -> dict[str, str]:
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            AWS_REGION="us-east-1",
            AWS_DEFAULT_REGION="us-east-1",
            AWS_ACCESS_KEY_ID="test",
            AWS_SECRET_ACCESS_KEY="test",
            AWS_EC2_METADATA_DISABLED="true",
            AWS_LAMBDA_FUNCTION_NAME=self.name,
            AWS_LAMBDA_FUNCTION_MEMORY_SIZE="1024",
            AWS_LAMBDA_FUNCTION_TIMEOUT=str(self.timeout),
            AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
            LAMBDA_TASK_ROOT=str(self.code_dir),
            POWERTOOLS_TRACE_DISABLED="true",  # no X-Ray daemon here
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.update(self.env)
        env["PYTHONPATH"] = os.pathsep.join(self.pythonpath)
        return env

    def start(self) -> LambdaFunction:
        if self._proc is not None:
            return self
        rie = rie_binary()
        self.port = free_port()
        api_port = free_port()
        while api_port == self.port:
            api_port = free_port()
        fd, log = tempfile.mkstemp(prefix=f"momor-rie-{self.name}-", suffix=".log")
        self.log_path = Path(log)
        atexit.register(self.stop)
        with os.fdopen(fd, "wb") as out:  # a file, not a pipe: a full pipe would stall the function
            self._proc = subprocess.Popen(
                [str(rie), "--runtime-interface-emulator-address", f"127.0.0.1:{self.port}",
                 "--runtime-api-address", f"127.0.0.1:{api_port}", "--log-level", "info", *self.command],
                cwd=self.code_dir, env=self._process_env(), stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise HarnessError(f"the emulator for {self.name} exited ({self._proc.returncode}):\n{self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise HarnessError(f"the emulator for {self.name} did not listen within {START_TIMEOUT:.0f} s:\n{self.log()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/2015-03-31/functions/function/invocations"

    def invoke_raw(self, event: Any, timeout: float = INVOKE_TIMEOUT) -> bytes:
        """POST the event to the emulator; its reply as bytes (the handler's result, or an error)."""
        request = urllib.request.Request(self.url, data=json.dumps(event).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return reply.read()
        except urllib.error.HTTPError as exc:
            raise HarnessError(f"the emulator answered {exc.code}: {exc.read()!r}\n{self.log()}") from None

    def invoke(self, event: Any, timeout: float = INVOKE_TIMEOUT) -> Answer:
        raw = self.invoke_raw(event, timeout)
        if self.streaming:
            return decode_streamed(raw, self.log)
        try:
            payload = json.loads(raw)
        except ValueError:
            raise AssertionError(f"the function's reply is not JSON: {raw[:500]!r}\n{self.log()}") from None
        if isinstance(payload, dict) and "errorType" in payload and "statusCode" not in payload:
            raise AssertionError(f"the function failed: {payload}\n{self.log()}")
        return decode_answer(payload)

    def log(self, tail: int = 6000) -> str:
        """The emulator's and the function's output so far (the end of it)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-tail:]

    def stop(self) -> None:
        """Stop what this object started (only that). Safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.log_path is not None and not os.environ.get("MOMOR_KEEP_RIE_LOGS"):
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def __enter__(self) -> LambdaFunction:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
