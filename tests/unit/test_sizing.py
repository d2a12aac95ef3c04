"""infra/bench/sizing.py: a memory size becomes Lambda's CPU share as a CFS quota, and the process
under test really runs inside that cgroup (needs root and a cgroup cpu controller: skipped otherwise)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from infra.bench import sizing


def test_the_quota_is_the_share_of_one_vcpu_at_1769_mb():
    assert sizing.quota_us(1769) == sizing.PERIOD_US
    assert sizing.quota_us(1024) == round(100_000 * 1024 / 1769)  # 57,886 µs of each 100 ms
    assert sizing.quota_us(128, period_us=100_000) == 7236
    assert sizing.quota_us(1, period_us=10_000) == 1000  # the kernel refuses less than 1 ms


@pytest.mark.skipif(not sizing.cgroups_writable(), reason="needs root and a writable cgroup cpu controller")
def test_the_command_runs_inside_a_cgroup_limited_to_the_sizes_share():
    with sizing.cpu_share(256) as procs:
        group = procs.parent
        quota = (group / "cpu.cfs_quota_us") if (group / "cpu.cfs_quota_us").exists() else (group / "cpu.max")
        assert quota.read_text().split()[0] == str(sizing.quota_us(256))
        done = subprocess.run(sizing.in_group(["cat", "/proc/self/cgroup"], procs), capture_output=True,
                              text=True, check=True)
        assert f"/{group.name}" in done.stdout, done.stdout
    assert not Path(group).exists(), "the cgroup is removed afterwards"
