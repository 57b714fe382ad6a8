"""What a result's ``machine`` block records about the CPU."""

import os
import sys

import pytest

from toktier.bench.machine import machine_facts


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="reads /proc/cpuinfo")
def test_machine_block_names_the_cpu_generation_not_only_its_model_name():
    cpu_id = machine_facts()["cpu_id"]
    # the first processor block of /proc/cpuinfo, read here independently
    first = {}
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                break
            key, _, value = line.partition(":")
            first[key.strip()] = value.strip()
    if "vendor_id" not in first:
        pytest.skip("no x86 identification in /proc/cpuinfo (another architecture)")
    assert cpu_id["vendor"] == first["vendor_id"]
    assert cpu_id["family"] == first["cpu family"] and cpu_id["family"].isdigit()
    assert cpu_id["model"] == first["model"]
    assert cpu_id["avx512"] == ("avx512f" in first.get("flags", "").split())


@pytest.mark.skipif(not sys.platform.startswith("linux")
                    or not os.path.isdir("/sys/devices/system/cpu/cpu0/cache/index0"),
                    reason="reads the caches from sysfs")  # fmt: skip
def test_machine_block_lists_the_caches_of_the_first_core():
    caches = machine_facts()["cpu_id"]["caches"]
    assert any(k.startswith("L1") for k in caches)
    assert all(v[:-1].isdigit() and v[-1] in "KMG" for v in caches.values())
