"""Cold start per function: a fresh `python -c` imports functions/<route>/app.py and serves its first
call through the Lambda handler (Mangum, an API Gateway HTTP API event) against the local fake and
emulators; then a second call, for contrast. Several runs each; the report takes medians.

AWS_LAMBDA_FUNCTION_NAME is set as Lambda sets it, so the import does what it does on Lambda: the
first call's own work (momor/lambda_stream/warmup.py) is part of the import, not of the first call.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from . import payloads
from .stack import ROOT, model_name

SNIPPET = """
import time
t0 = time.perf_counter()
import importlib, json, sys
app = importlib.import_module("functions.%s.app")
t1 = time.perf_counter()
class Ctx:
    aws_request_id = "bench"
    function_name = "bench"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:bench"
    def get_remaining_time_in_millis(self):
        return 60000
event = json.loads(sys.stdin.read())
first = app.handler(event, Ctx())
t2 = time.perf_counter()
second = app.handler(event, Ctx())
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_call_ms": (t2 - t1) * 1e3,
                  "second_call_ms": (t3 - t2) * 1e3, "status": first["statusCode"]}))
"""


def _event(method: str, path: str, key: str, body: bytes | None) -> dict:
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json", "host": "bench.local"}
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "bench",
            "domainName": "bench.local",
            "domainPrefix": "bench",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
                     "userAgent": "bench"},
            "requestId": "bench",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2025:00:00:00 +0000",
            "timeEpoch": 1735689600000,
        },
        "body": body.decode() if body is not None else None,
        "isBase64Encoded": False,
    }


def _api_key(env: dict[str, str]) -> str:
    """A key in the API-keys table (as on AWS: the first call looks it up in DynamoDB)."""
    code = "from momor.store import apikeys; print(apikeys.create_api_key('bench-coldstart')[0])"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def functions() -> dict[str, tuple[str, str, bytes | None]]:
    """Function -> (method, path, body) of its first call, for each function present."""
    known = {
        "models": ("POST", "/models", payloads.body("native", model_name("openai", "short"), False, "small")),
        "chat_completions": ("POST", "/v1/chat/completions",
                             payloads.body("openai", model_name("openai", "short"), False, "small")),
        "messages": ("POST", "/v1/messages",
                     payloads.body("anthropic", model_name("anthropic", "short"), False, "small")),
        "generations": ("GET", "/generations/0123456789abcdef0123456789abcdef", None),
    }
    return {name: call for name, call in known.items() if (ROOT / "functions" / name / "app.py").exists()}


def measure(env: dict[str, str], runs: int) -> dict[str, dict]:
    key = _api_key(env)
    out = {}
    for name, (method, path, body) in functions().items():
        event = json.dumps(_event(method, path, key, body))
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", SNIPPET % name], input=event, cwd=ROOT,
                                  env={**env, "AWS_LAMBDA_FUNCTION_NAME": f"momor-bench-{name}"},
                                  capture_output=True, text=True)
            wall = (time.perf_counter() - t0) * 1e3
            if done.returncode:
                raise RuntimeError(f"cold start of {name} failed:\n{done.stderr[-2000:]}")
            got = json.loads(done.stdout.strip().splitlines()[-1])
            got["process_ms"] = wall
            samples.append(got)
        med = {k: statistics.median(s[k] for s in samples) for k in
               ("import_ms", "first_call_ms", "second_call_ms", "process_ms")}
        med["import_first_ms"] = statistics.median(s["import_ms"] + s["first_call_ms"] for s in samples)
        med["status"] = samples[0]["status"]
        med["runs"] = runs
        out[name] = med
        print(f"  cold start {name}: import {med['import_ms']:.0f} ms + first call {med['first_call_ms']:.0f} ms "
              f"(second {med['second_call_ms']:.1f} ms; process {med['process_ms']:.0f} ms; "
              f"HTTP {med['status']})", flush=True)
    return out
