"""The processes a benchmark run needs, each started once and stopped at the end (only those it
started): the fake provider, the AWS emulators, Momor's server in its variants, LiteLLM's proxy.

Everything listens on 127.0.0.1; LiteLLM is told to use its bundled price map rather than fetch one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from infra.emulators import Emulators, free_port, provision

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "infra" / "bench"
RESULTS = BENCH / "results"
LITELLM_VENV = BENCH / ".venv-litellm"
API_KEY = "bench-key"
LITELLM_KEY = "sk-bench-master"
SHAPES = ("short", "long", "paced", "huge")
TICK = os.sysconf("SC_CLK_TCK")
WIRES = {"openai": ("openai_chat", "gpt", "openai/v1"), "anthropic": ("anthropic", "claude", "anthropic")}

OPENAI_PARAMS = ["maxTokens", "temperature", "topP", "toolUse", "stop", "seed", "parallelToolCalls", "user"]
ANTHROPIC_PARAMS = ["maxTokens", "temperature", "topP", "topK", "toolUse", "stop", "parallelToolCalls", "user"]


EMBED_MODEL = "bench-embed"
EMBED_DIMENSIONS = 256
"""The fake's embedding vectors' length (infra/bench/fake.py)."""


def model_name(wire: str, shape: str) -> str:
    return f"bench-{WIRES[wire][1]}-{shape}"


def provider_name(wire: str, shape: str) -> str:
    return f"bench-{wire}-{shape}"


def catalog(fake_port: int) -> dict:
    providers, models = [], []
    for wire, (wire_name, _, suffix) in WIRES.items():
        for shape in SHAPES:
            providers.append({
                "name": provider_name(wire, shape),
                "wire": wire_name,
                "baseUrl": f"http://127.0.0.1:{fake_port}/{shape}/{suffix}",
                "parameters": OPENAI_PARAMS if wire == "openai" else ANTHROPIC_PARAMS,
            })
            models.append({
                "name": model_name(wire, shape),
                "publisher": "bench",
                "tier": "medium",
                "capabilities": {"tools": True, "maxOutputTokens": 64000, "contextWindow": 400000},
                "offerings": [{"provider": provider_name(wire, shape), "id": "bench-model",
                               "prices": {"input": 1.0, "output": 2.0}}],
            })
    # Embeddings (issue 35): one model on the short OpenAI provider, its vectors as the fake writes them.
    models.append({"name": EMBED_MODEL, "publisher": "bench", "kind": "embedding", "tier": "low",
                   "embedding": {"dimensions": EMBED_DIMENSIONS},
                   "offerings": [{"provider": provider_name("openai", "short"), "id": "bench-embed",
                                  "prices": {"input": 0.02, "output": 0.0}}]})
    return {"version": 1, "providers": providers, "models": models}


def saved_keys() -> dict[str, str]:
    return {provider_name(w, s): f"sk-bench-{w}" for w in WIRES for s in SHAPES}


def litellm_config(fake_port: int) -> str:
    """LiteLLM's proxy config (YAML) for the same models on the same fake; JSON is valid YAML."""
    model_list = []
    for wire, (_, _, suffix) in WIRES.items():
        for shape in SHAPES:
            model_list.append({
                "model_name": model_name(wire, shape),
                "litellm_params": {
                    "model": f"{wire}/bench-model",
                    "api_base": f"http://127.0.0.1:{fake_port}/{shape}/{suffix}",
                    "api_key": f"sk-bench-{wire}",
                },
            })
    model_list.append({"model_name": EMBED_MODEL, "litellm_params": {
        "model": "openai/bench-embed", "api_base": f"http://127.0.0.1:{fake_port}/short/openai/v1",
        "api_key": "sk-bench-openai"}})
    return json.dumps({"model_list": model_list, "general_settings": {"master_key": LITELLM_KEY}}, indent=1)


def wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout:.0f} s")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Stack:
    fake_port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    """The environment Momor's processes run with (emulators, MOMOR_*)."""
    servers: dict[str, tuple[int, subprocess.Popen]] = field(default_factory=dict)
    """name -> (port, process) of each router variant."""
    headers: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    """name -> the headers a variant's calls carry besides the key (the response cache's)."""
    procs: list[subprocess.Popen] = field(default_factory=list)
    emulator_pids: list[int] = field(default_factory=list)
    """DynamoDB Local's JVM and moto's server (see `emulators_idle`)."""

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> tuple[int, subprocess.Popen]:
        RESULTS.mkdir(parents=True, exist_ok=True)
        log = open(RESULTS / f"{name}.log", "wb")  # noqa: SIM115 - kept open for the process's life
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc.pid, proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()


def momor_env(endpoints_env: dict[str, str], catalog_file: Path) -> dict[str, str]:
    env = {**os.environ, **endpoints_env}
    env.pop("MOMOR_CATALOG_BUCKET", None)
    env.pop("MOMOR_CATALOG_KEY", None)
    env["MOMOR_CATALOG_FILE"] = str(catalog_file)
    # The limiter runs as deployed (counted in DynamoDB Local, by leases), with a limit the load
    # generator cannot reach: 600 a minute, the default, would refuse most of a saturation run.
    env.setdefault("MOMOR_RATE_LIMIT", "100000000")
    env["PYTHONPATH"] = str(ROOT)
    return env


@contextlib.contextmanager
def running(variants: dict[str, dict], with_litellm: bool) -> Iterator[Stack]:
    """Start the fake, the emulators and every router; yield the stack; stop them all.

    variants: Momor variant name -> {"records": mode, "server": "uvloop" | "asyncio",
    "pythonpath": [dirs first on the path], "env": {its own environment variables},
    "headers": ((name, value), ...) its calls carry}.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    stack = Stack()
    try:
        stack.fake_port = free_port()
        _, fake = stack.spawn("fake", [sys.executable, "-m", "infra.bench.fake", "--port", str(stack.fake_port)],
                              {**os.environ, "PYTHONPATH": str(ROOT)})
        wait_port(stack.fake_port, fake, "the fake provider")
        catalog_file = RESULTS / "catalog.json"
        catalog_file.write_text(json.dumps(catalog(stack.fake_port), indent=1))
        emulators = Emulators()
        with emulators as endpoints:
            stack.emulator_pids = emulators.pids()
            env = endpoints.env() | provision(endpoints, keys=saved_keys())
            stack.env = momor_env(env, catalog_file)
            for name, spec in variants.items():
                port = free_port()
                env_v = dict(stack.env)
                # A variant may put a scratch copy of momor (a prototype) ahead of the installed one.
                paths = [*spec.get("pythonpath", ()), str(ROOT)]
                env_v["PYTHONPATH"] = os.pathsep.join(paths)
                env_v.update(spec.get("env", {}))  # a variant's own settings (OpenTelemetry export on)
                argv = [sys.executable, "-m", "infra.bench.momor_server", "--port", str(port),
                        "--api-key", API_KEY, "--records", spec["records"], "--server", spec.get("server", "uvloop")]
                _, proc = stack.spawn(name, argv, env_v)
                stack.servers[name] = (port, proc)
                stack.headers[name] = tuple(spec.get("headers", ()))
            if with_litellm:
                port = free_port()
                config = RESULTS / "litellm.yaml"
                config.write_text(litellm_config(stack.fake_port))
                env_l = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOMOR_"))}
                env_l |= {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
                          "LITELLM_LOG": "ERROR", "NO_DOCS": "True"}
                argv = [str(LITELLM_VENV / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1",
                        "--port", str(port), "--num_workers", "1"]
                _, proc = stack.spawn("litellm", argv, env_l)
                stack.servers["litellm"] = (port, proc)
            for name, (port, proc) in stack.servers.items():
                wait_port(port, proc, name, timeout=180)
            yield stack
    finally:
        stack.stop()


@contextlib.contextmanager
def emulators_idle(stack: Stack) -> Iterator[None]:
    """Run the emulators' threads at SCHED_IDLE for the duration: the sequential measurements.

    On AWS, DynamoDB's work happens on DynamoDB's machines. Here DynamoDB Local is a JVM on the same
    2 cores, and one conditional UpdateItem (the rate limiter reserving its next lease, every 50th
    call) keeps it busy for 3-15 ms, preempting the router or the load generator mid-call: at normal
    priority those calls set the router's p99 (2.5-3 ms, against 0.6-1.2 ms with no limiter). At SCHED_IDLE the
    emulators run only on a core nothing else wants, so the router's own cost is what is measured;
    the store trip's own CPU in the router (signing, sending, parsing) still counts. The throughput
    runs leave them at normal priority, where a starved emulator would throttle the router instead.
    """
    changed = _set_policy(stack.emulator_pids, os.SCHED_IDLE)
    try:
        yield
    finally:
        _set_policy(changed, os.SCHED_OTHER)


async def emulators_settled(stack: Stack, quiet_s: float = 0.2, most_s: float = 5.0) -> None:
    """Wait until the emulators have used no CPU for `quiet_s` (at most `most_s`): the work one target
    left them (Momor as shipped writes a record per call) is not done on the next target's time."""
    loop = asyncio.get_running_loop()
    end = loop.time() + most_s
    last = _cpu_of(stack.emulator_pids)
    while loop.time() < end:
        await asyncio.sleep(quiet_s)
        now = _cpu_of(stack.emulator_pids)
        if now == last:
            return
        last = now


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds (fields 14 and 15 of /proc/<pid>/stat), its ended threads
    included; counted in clock ticks (10 ms here)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):  # exited
            total += cpu_seconds(pid)
    return total


def _set_policy(pids: list[int], policy: int) -> list[int]:
    """Every thread of `pids` to `policy` (threads started meanwhile included on the way back)."""
    done = []
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:  # exited
            continue
        for tid in threads:
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setscheduler(int(tid), policy, os.sched_param(0))
        done.append(pid)
    return done
