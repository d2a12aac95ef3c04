"""infra/bench/snapstart_restore.py's mechanics on a real build: after the snapshot point the runtime
really runs inside the size's cgroup (all its threads), and the restore (credentials fetched again from
the container endpoint) and the first call answer HTTP 200. Times are measured, never asserted.
Needs root and a writable cgroup cpu controller (skipped otherwise) and SAM CLI for the build."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from infra.bench import lambda_cold, sizing, snapstart_restore
from infra.emulators import Endpoints

from . import rie

pytestmark = pytest.mark.skipif(not sizing.cgroups_writable(), reason="needs root and a writable cgroup cpu controller")


def _cgroups_of_every_thread(pid: int) -> dict[int, str]:
    return {int(task.name): (task / "cgroup").read_text() for task in Path(f"/proc/{pid}/task").iterdir()}


def test_a_restored_runtime_runs_in_the_sizes_cgroup_and_answers(aws: Endpoints) -> None:
    try:
        build = rie.sam_build()
    except rie.HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)
    seen: dict[int, dict[int, str]] = {}
    with sizing.build_copy(build.dir) as (copy, _), lambda_cold.local_aws(aws) as (env, key):
        event = lambda_cold.first_call("ModelsFunction", key)
        for memory_mb in (0, 256):
            with sizing.cpu_share(memory_mb) if memory_mb else contextlib.nullcontext() as procs:
                fn = lambda_cold.function(copy, "ModelsFunction", env)
                run = snapstart_restore.one_run(fn, event, memory_mb, procs, warm=1, pause=0.0,
                                                on_served=lambda pid, m=memory_mb: seen.__setitem__(
                                                    m, _cgroups_of_every_thread(pid)))
                group = procs.parent.name if procs else None
            assert run["status"] == 200, run
            assert run["credentials_fetched"] == 2, "once before the snapshot, once by the after-restore hook"
            if group is None:
                assert not any("momor-sizing" in text for text in seen[0].values()), seen[0]
            else:
                outside = {tid: text for tid, text in seen[256].items()
                           if not any(line.endswith(f":/{group}") for line in text.splitlines())}
                assert not outside, f"threads outside {group}: {outside}"
