"""Cold start measured the way Lambda runs a function: the built artifacts, read-only, with the
bytecode the build ships, started by SAM CLI's Runtime Interface Emulator through the same
entry point the template gives it, pinned to one CPU.

    python -m infra.bench.lambda_cold                    # sam build, then every routed function, 3 runs each
    python -m infra.bench.lambda_cold --build .aws-sam/build --runs 5 --functions ModelsFunction
    python -m infra.bench.lambda_cold --bytecode none    # as if the layers shipped no .pyc (the old build)
    python -m infra.bench.lambda_cold --functions all    # every function in functions/, not only the routed three
    python -m infra.bench.lambda_cold --profile ModelsFunction   # cProfile (CPU) of the first and a warm call

What happens, per function and per run:

1. The build (`sam build`, or --build) is copied once to a scratch folder, keeping mtimes. --bytecode
   chooses what .pyc it holds: `as-built` keeps what the build made; `compile` (the default) adds
   `compileall --invalidation-mode unchecked-hash` only where the build shipped none (what a build that
   compiles at build time ships; unchecked-hash because Lambda's layers keep no usable mtimes);
   `none` deletes every .pyc. The copy is then made read-only (write bits off) and the function runs
   with PYTHONDONTWRITEBYTECODE=1, so no run leaves bytecode for the next one, as on Lambda.
2. A fresh emulator (tests/lambda/rie.py) starts the function's runtime the way the template says:
   functions with AWS_LAMBDA_EXEC_WRAPPER go through that script (momor/lambda_bootstrap.sh from the
   copied layer, handed the interpreter as the managed runtime hands it), the others through the stock
   client (`python -m awslambdaric app.handler`). The runtime is pinned with `taskset -c 0`: one vCPU,
   which is what a 1024 MB function gets. The emulator starts the runtime on the first invocation.
3. First invocation: from the request to the emulator to its reply. That is INIT (interpreter start,
   imports, the app built at module scope) plus the first call (first AWS reads: catalog, keys, the
   API-key lookup; the first provider connection). Then 5 warm invocations of the same request.

Everything the function calls is local: the benchmark's fake provider, DynamoDB Local and moto for
S3 / Secrets Manager, as infra/emulators.py starts them. Prints a table; writes
infra/bench/results/lambda_cold.json. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.emulators import Emulators, Endpoints, free_port, provision

from . import payloads
from .stack import RESULTS, ROOT, catalog, cpu_seconds, model_name, saved_keys, wait_port

rie = importlib.import_module("tests.lambda.rie")

ROUTED = ("ModelsFunction", "ChatCompletionsFunction", "MessagesFunction")
"""The functions that route a call to a provider (issue 14's INIT + first call target)."""
OTHERS = ("DecisionFunction", "TranscribeFunction", "CatalogFunction", "GenerationsFunction", "UsageFunction")
"""The rest of functions/: `--functions all` measures them too. The bench catalog has no decision or
transcription model, so their first call is refused after authentication and the catalog (HTTP
4xx in the table): INIT and a first call through the same path, without a provider round trip."""
WARM_CALLS = 5


def first_call(logical_id: str, api_key: str) -> dict[str, Any]:
    """The API Gateway (REST) event of the function's first call: a small buffered call."""
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
    calls = {
        "ModelsFunction": ("/models", "native", "openai"),
        "ChatCompletionsFunction": ("/v1/chat/completions", "openai", "openai"),
        "MessagesFunction": ("/v1/messages", "anthropic", "anthropic"),
    }
    if logical_id in calls:
        path, dialect, wire = calls[logical_id]
        body = payloads.body(dialect, model_name(wire, "short"), False, "small")
        return rie.api_event("rest", "POST", path, headers=headers, body=body.decode())
    if logical_id == "DecisionFunction":
        body = {"systemPrompt": "", "messages": [{"type": "user", "value": "Yes or no?"}], "options": ["yes", "no"]}
        return rie.api_event("rest", "POST", "/models/decision", headers=headers, body=json.dumps(body))
    if logical_id == "TranscribeFunction":
        return rie.api_event("rest", "POST", "/models/transcribe", headers=headers,
                             body=json.dumps({"file": {"type": "file", "url": "https://example.invalid/a.mp3"}}))
    if logical_id == "UsageFunction":
        return rie.api_event("rest", "GET", "/usage", headers=headers)
    if logical_id == "GenerationsFunction":
        return rie.api_event("rest", "GET", "/generations/0123456789abcdef0123456789abcdef",
                             resource="/generations/{id}", headers=headers,
                             path_parameters={"id": "0123456789abcdef0123456789abcdef"})
    return rie.api_event("rest", "GET", "/v1/models", headers=headers)


# --- the read-only copy of the build --------------------------------------------------------------


def _pyc_count(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.pyc"))


def prepare(build_dir: Path, bytecode: str) -> tuple[Path, dict[str, Any]]:
    """A read-only copy of the build with the bytecode chosen; what it holds, for the report."""
    copy = Path(tempfile.mkdtemp(prefix="momor-lambda-cold-")) / "build"
    shutil.copytree(build_dir, copy, symlinks=True)  # copy2: mtimes kept, as a zip keeps them
    shipped = _pyc_count(copy)
    if bytecode == "none":
        for pyc in copy.rglob("*.pyc"):
            pyc.unlink()
    elif bytecode == "compile" and shipped == 0:
        compileall.compile_dir(str(copy), quiet=1, workers=0,
                               invalidation_mode=compileall.py_compile.PycInvalidationMode.UNCHECKED_HASH)
    info = {"bytecode": bytecode, "pyc_shipped": shipped, "pyc_used": _pyc_count(copy),
            "compiled_here": bytecode == "compile" and shipped == 0}
    for path in copy.rglob("*"):
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~0o222)
    return copy, info


def _unprotect(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


# --- one function under the emulator --------------------------------------------------------------


def _interpreter() -> str:
    """The base python3.13 (not this venv's: its site-packages would shadow the layers), named as
    the managed runtime names it, since the exec wrapper reads the version from the name."""
    base = Path(sys._base_executable).resolve()
    named = base.parent / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return str(named if named.exists() else base)


def function(build: rie.Build, logical_id: str, env: dict[str, str]) -> rie.LambdaFunction:
    """The function as its template entry starts it, its runtime pinned to CPU 0."""
    template_env = rie.function_env(logical_id)
    own = rie.load_template()["Resources"][logical_id]["Properties"].get("Environment", {}).get("Variables", {})
    wrapper = own.get(rie.EXEC_WRAPPER) or (rie.load_template().get("Globals", {}).get("Function", {})
                                            .get("Environment", {}).get("Variables", {}).get(rie.EXEC_WRAPPER))
    path = [*build.layer_paths(), rie.runtime_client_dir()]
    env = template_env | env
    if wrapper:
        # /opt/python/momor/lambda_bootstrap.sh -> the copied layer's script; the runtime hands it
        # the interpreter and its own bootstrap, which the wrapper replaces.
        script = build.layer_paths()[0] / Path(wrapper).relative_to("/opt/python")
        command = ["taskset", "-c", "0", "bash", str(script), _interpreter(), "/var/runtime/bootstrap.py"]
        streaming = bool(env.get("MOMOR_ASGI_APP"))
    else:
        command = ["taskset", "-c", "0", _interpreter(), "-S", "-m", "awslambdaric", "app.handler"]
        streaming = False
    fn = rie.LambdaFunction(build.artifact(logical_id), env, pythonpath=path, command=command,
                            name=logical_id, streaming=streaming)
    fn.entry = "exec wrapper (momor.lambda_stream)" if wrapper else "stock runtime client (awslambdaric)"
    return fn


def _timed_invoke(fn: rie.LambdaFunction, event: dict[str, Any]) -> tuple[float, int]:
    t0 = time.perf_counter()
    answer = fn.invoke(event)
    return (time.perf_counter() - t0) * 1e3, answer.status


def _runtime_pid(rie_pid: int) -> int | None:
    """The function's runtime: the emulator's child (taskset, bash and python exec into one pid)."""
    for task in Path(f"/proc/{rie_pid}/task").iterdir():
        children = (task / "children").read_text().split()
        if children:
            return int(children[0])
    return None


def _cpu_ms(pid: int | None) -> float:
    """User + system CPU the process has used so far (clock ticks, so 10 ms steps). Not schedstat's
    nanoseconds: those count only the threads still alive, and INIT's warm-up threads are gone."""
    return float("nan") if pid is None else cpu_seconds(pid) * 1e3


def one_run(fn: rie.LambdaFunction, event: dict[str, Any]) -> dict[str, Any]:
    """Wall time of the first and warm calls, and the CPU the runtime spent on each: on a loaded
    machine the wall time includes waiting for the core, the CPU time does not."""
    with fn:
        first_ms, status = _timed_invoke(fn, event)
        assert fn._proc is not None
        pid = _runtime_pid(fn._proc.pid)
        cpu_first = _cpu_ms(pid)
        warm = [_timed_invoke(fn, event)[0] for _ in range(WARM_CALLS)]
        cpu_warm = (_cpu_ms(pid) - cpu_first) / WARM_CALLS
    return {"first_ms": first_ms, "warm_ms": statistics.median(warm), "status": status,
            "cpu_first_ms": cpu_first, "cpu_warm_ms": cpu_warm}


INIT_SNIPPET = "import time, json; t = time.perf_counter(); import app; " \
    "print(json.dumps({'import_ms': (time.perf_counter() - t) * 1e3, 'cpu_ms': time.process_time() * 1e3}))"

STREAMING_INIT_SNIPPET = """
import time, json
t = time.perf_counter()
import asyncio
from momor.lambda_stream import runner
loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
if hasattr(runner, "initialize"):
    runner.initialize("app:app", loop)
else:  # an older build: its runner.main's steps
    from mangum.adapter import Mangum
    from mangum.protocols.lifespan import LifespanCycle
    app = runner.load_app("app:app")
    Mangum(app, lifespan="off")
    LifespanCycle(app, "auto").__enter__()
print(json.dumps({'import_ms': (time.perf_counter() - t) * 1e3, 'cpu_ms': time.process_time() * 1e3}))
"""


def init_only(fn: rie.LambdaFunction) -> dict[str, float]:
    """INIT alone, approximately: a fresh pinned interpreter with the same path and environment doing
    what the function's runtime does before its first call: the streaming bridge's INIT
    (`runner.initialize`: the app imported and built, its lifespan, the warm-up) for a function behind
    the exec wrapper, `import app` for the stock runtime client. No Runtime API: the runtime client's
    own start is left out."""
    env = fn._process_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fn.code_dir), env["PYTHONPATH"]])
    snippet = STREAMING_INIT_SNIPPET if fn.entry.startswith("exec wrapper") else INIT_SNIPPET
    t0 = time.perf_counter()
    done = subprocess.run(["taskset", "-c", "0", _interpreter(), "-S", "-c", snippet], cwd=fn.code_dir,
                          env=env, capture_output=True, text=True, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return {"process_ms": (time.perf_counter() - t0) * 1e3, **got}


IMPORT_PARTS = ("fastapi", "fastapi.openapi.models", "fastapi.telemetry", "starlette", "pydantic", "mangum",
                "httpx2", "aws_lambda_powertools", "botocore", "momor.app", "app")
"""What `-X importtime` reports for each (cumulative, µs), from the function's INIT."""


def import_path(fn: rie.LambdaFunction, runs: int = 3) -> dict[str, float]:
    """Where INIT's import time goes: `python -X importtime -c 'import app'` in the read-only copy,
    pinned like the function; the median of `runs` fresh processes, ms per module (cumulative)."""
    env = fn._process_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fn.code_dir), env["PYTHONPATH"]])
    seen: dict[str, list[float]] = {}
    for _ in range(runs):
        done = subprocess.run(["taskset", "-c", "0", _interpreter(), "-S", "-X", "importtime", "-c", "import app"],
                              cwd=fn.code_dir, env=env, capture_output=True, text=True, check=True)
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[2].strip() in IMPORT_PARTS and parts[1].strip().isdigit():
                seen.setdefault(parts[2].strip(), []).append(int(parts[1]) / 1000)
    return {name: statistics.median(v) for name, v in seen.items()}


PROFILE_SNIPPET = r"""
import asyncio, cProfile, json, pstats, sys, time
cpu0 = time.process_time()
from mangum.adapter import Mangum
from mangum.protocols.lifespan import LifespanCycle
from momor import background
from momor.lambda_stream import runner
from momor.lambda_stream.runtime_api import Invocation

class Stream:
    closed = False
    async def send(self, data): pass
    async def finish(self):
        self.closed = True
        return type("Reply", (), {"status": 202})()
    async def fail(self, payload): self.closed = True

class Api:
    async def open_stream(self, request_id): return Stream()
    async def post_invocation_error(self, request_id, payload): print(payload, file=sys.stderr)

background.set_inline(False)
loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
if hasattr(runner, "initialize"):
    adapter, lifespan = runner.initialize(sys.argv[1])
else:  # an older build: the same steps as its runner.main
    app = runner.load_app(sys.argv[1])
    adapter, lifespan = Mangum(app, lifespan="off"), LifespanCycle(app, "auto")
    lifespan.__enter__()
cpu_init = time.process_time()
event = sys.stdin.buffer.read()
out = {"init_cpu_ms": (cpu_init - cpu0) * 1e3}
for name in ("first", "warm"):
    invocation = Invocation("r-" + name, 0, "arn:aws:lambda:us-east-1:000000000000:function:f", None, None, None,
                            None, event)
    profile = cProfile.Profile(time.process_time)  # CPU, not wall: the machine is shared
    cpu = time.process_time()
    profile.enable()
    loop.run_until_complete(runner.handle(adapter, Api(), invocation, lifespan.lifespan_state))
    loop.run_until_complete(background.drain())
    profile.disable()
    out[name + "_cpu_ms"] = (time.process_time() - cpu) * 1e3
    profile.dump_stats(sys.argv[2] + "." + name)
print(json.dumps(out))
"""


def profile(fn: rie.LambdaFunction, event: dict[str, Any], prefix: Path, top: int = 40) -> dict[str, float]:
    """cProfile of the first call and of a warm one, in one pinned interpreter that initialises the
    function as the streaming bridge does (runner.initialize) and then runs `runner.handle` twice
    with a Runtime API that takes the answer and drops it. INIT itself is not profiled (see
    `import_path` for where its imports go). Prints the first call's top functions by cumulative time."""
    import pstats

    env = fn._process_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fn.code_dir), env["PYTHONPATH"]])
    done = subprocess.run(["taskset", "-c", "0", _interpreter(), "-S", "-c", PROFILE_SNIPPET, "app:app", str(prefix)],
                          cwd=fn.code_dir, env=env, input=json.dumps(event).encode(), capture_output=True, check=True)
    got = json.loads(done.stdout.decode().strip().splitlines()[-1])
    pstats.Stats(str(prefix) + ".first").sort_stats("cumulative").print_stats(top)
    return got


# --- the local AWS and provider ----------------------------------------------------------------------


def _api_key(endpoints: Endpoints, table: str) -> str:
    from momor.store import apikeys

    plaintext = apikeys.KEY_PREFIX + uuid.uuid4().hex
    digest = apikeys.key_hash(plaintext)
    endpoints.client("dynamodb").put_item(
        TableName=table,
        Item={"keyHash": {"S": digest}, "id": {"S": digest[:16]}, "name": {"S": "lambda cold start"},
              "created": {"S": "2026-01-01T00:00:00+00:00"}, "disabled": {"BOOL": False}, "zdr": {"BOOL": False}},
    )
    return plaintext


def _warm_emulators(endpoints: Endpoints, names: dict[str, str]) -> None:
    """The emulators' own first requests are slow (DynamoDB Local's JVM compiles as it goes, moto
    loads its backends): pay that here, so a function's first call meets them as AWS would be."""
    ddb, s3, sm = endpoints.client("dynamodb"), endpoints.client("s3"), endpoints.client("secretsmanager")
    for _ in range(30):
        for table in (names["MOMOR_API_KEYS_TABLE"], names["MOMOR_RECORDS_TABLE"]):
            ddb.get_item(TableName=table, Key={"keyHash" if "keys" in table else "id": {"S": "warm"}})
        ddb.put_item(TableName=names["MOMOR_RECORDS_TABLE"], Item={"id": {"S": "warm"}})
        s3.get_object(Bucket=names["MOMOR_CATALOG_BUCKET"], Key=names["MOMOR_CATALOG_KEY"])["Body"].read()
        sm.get_secret_value(SecretId=names["MOMOR_KEYS_SECRET"])


@contextlib.contextmanager
def local_aws(endpoints: Endpoints | None = None) -> Iterator[tuple[dict[str, str], str]]:
    """The fake provider and the emulators provisioned as template.yaml's resources: (env, API key)."""
    scratch = Path(tempfile.mkdtemp(prefix="momor-lambda-cold-aws-"))
    port = free_port()
    fake = subprocess.Popen([sys.executable, "-m", "infra.bench.fake", "--port", str(port)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_port(port, fake, "the fake provider")
        catalog_file = scratch / "catalog.json"
        catalog_file.write_text(json.dumps(catalog(port)))
        with contextlib.ExitStack() as stack:
            if endpoints is None:
                endpoints = stack.enter_context(Emulators())
            tag = uuid.uuid4().hex[:8]
            names = provision(endpoints, records_table=f"cold-records-{tag}", api_keys_table=f"cold-keys-{tag}",
                              catalog_bucket=f"cold-catalog-{tag}", catalog_file=catalog_file,
                              keys_secret=f"momor/cold-keys-{tag}", keys=saved_keys())
            key = _api_key(endpoints, names["MOMOR_API_KEYS_TABLE"])
            _warm_emulators(endpoints, names)
            yield endpoints.env() | names | {"MOMOR_RATE_LIMIT": "100000000"}, key
    finally:
        fake.terminate()
        fake.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)


# --- the whole measurement ---------------------------------------------------------------------------


def measure(functions: tuple[str, ...] = ROUTED, runs: int = 3, build_dir: Path | None = None,
            bytecode: str = "compile", endpoints: Endpoints | None = None) -> dict[str, Any]:
    started = time.monotonic()
    source = build_dir or rie.sam_build().dir
    copy, info = prepare(Path(source), bytecode)
    build = rie.Build(copy, 0.0, "")
    out: dict[str, Any] = {"build": info, "runs": runs, "warm_calls": WARM_CALLS, "functions": {}}
    try:
        with local_aws(endpoints) as (env, key):
            for logical_id in functions:
                event = first_call(logical_id, key)
                samples, inits = [], []
                for _ in range(runs):
                    fn = function(build, logical_id, env)
                    samples.append(one_run(fn, event))
                    inits.append(init_only(fn))

                def med(key: str, rows: list[dict[str, Any]]) -> float:
                    return statistics.median(r[key] for r in rows)

                row = {
                    "entry": fn.entry,
                    "first_ms": med("first_ms", samples),
                    "first_max_ms": max(s["first_ms"] for s in samples),
                    "warm_ms": med("warm_ms", samples),
                    "cpu_first_ms": med("cpu_first_ms", samples),
                    "cpu_warm_ms": med("cpu_warm_ms", samples),
                    "init_process_ms": med("process_ms", inits),
                    "init_import_ms": med("import_ms", inits),
                    "init_cpu_ms": med("cpu_ms", inits),
                    "cpu_first_each_ms": [round(r["cpu_first_ms"], 1) for r in samples],
                    "init_cpu_each_ms": [round(r["cpu_ms"], 1) for r in inits],
                    "status": samples[0]["status"],
                }
                if logical_id == functions[0]:
                    out["import_path"] = {"function": logical_id, "ms": import_path(fn)}
                out["functions"][logical_id] = row
                print(f"  lambda cold start {logical_id}: INIT + first call {row['first_ms']:.0f} ms wall "
                      f"(max {row['first_max_ms']:.0f}; CPU {row['cpu_first_ms']:.0f} ms), of which INIT about "
                      f"{row['init_process_ms']:.0f} ms wall (CPU {row['init_cpu_ms']:.0f}); warm call "
                      f"{row['warm_ms']:.1f} ms (CPU {row['cpu_warm_ms']:.1f}); HTTP {row['status']}; {row['entry']}",
                      flush=True)
    finally:
        _unprotect(copy.parent)
        shutil.rmtree(copy.parent, ignore_errors=True)
    out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    out["seconds"] = time.monotonic() - started
    return out


def profile_function(logical_id: str, build_dir: Path | None, bytecode: str) -> dict[str, float]:
    """`profile` in the read-only copy against the local stack; stats in results/profile-<id>.first|warm."""
    copy, _ = prepare(Path(build_dir or rie.sam_build().dir), bytecode)
    RESULTS.mkdir(parents=True, exist_ok=True)
    try:
        with local_aws() as (env, key):
            fn = function(rie.Build(copy, 0.0, ""), logical_id, env)
            return profile(fn, first_call(logical_id, key), RESULTS / f"profile-{logical_id}")
    finally:
        _unprotect(copy.parent)
        shutil.rmtree(copy.parent, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, help="an existing `sam build` output (default: build now)")
    parser.add_argument("--runs", type=int, default=3, help="fresh runtimes per function")
    parser.add_argument("--functions", default=",".join(ROUTED), help="logical ids, comma separated, or `all`")
    parser.add_argument("--bytecode", choices=("compile", "as-built", "none"), default="compile")
    parser.add_argument("--profile", metavar="FUNCTION",
                        help="instead: cProfile the first and a warm call of this (streaming) function")
    args = parser.parse_args(argv)
    if args.profile:
        print(json.dumps(profile_function(args.profile, args.build, args.bytecode)))
        return
    functions = ROUTED + OTHERS if args.functions == "all" else tuple(args.functions.split(","))
    out = measure(functions, args.runs, args.build, args.bytecode)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "lambda_cold.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out["build"]), f"load average {out['loadavg']}", f"{out['seconds']:.0f} s")


if __name__ == "__main__":
    main()
