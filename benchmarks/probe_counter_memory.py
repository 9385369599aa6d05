"""Probe: device memory one set of arrival counters takes (journal, session 42, Next 3). Each set is one cuMemAlloc
of 4 KB or more (_support._zeroed_counters), never freed; if the driver rounds each to a 2 MB page, a set costs 2 MB.
Prints cuMemGetInfo's free bytes before and after 100 sets of 1024 counters, and after 8 sets of 1 M counters.
Usage: PYTHONPATH=src python benchmarks/probe_counter_memory.py"""
import ctypes

import torch

from rooftop.ops import _support


def free_bytes() -> int:
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    with _support._driver_context(0):
        _support._driver("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
    return free.value


def main() -> None:
    device = torch.device("cuda", 0)
    _support._zeroed_counters(device, 1024)  # the context and the zeroing stream exist before the first reading
    for count, sets in ((1024, 100), (1 << 20, 8)):
        before = free_bytes()
        for _ in range(sets):
            _support._zeroed_counters(device, count)
        used = before - free_bytes()
        print(f"{sets} sets of {count} counters ({4 * count} B each): {used / 2**20:.2f} MiB of device memory, "
              f"{used / sets / 1024:.1f} KiB a set", flush=True)


if __name__ == "__main__":
    main()
