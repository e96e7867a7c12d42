"""What bench/'s PyTorch peer scripts share: the thread count and seed they run with, and the
BLAS torch runs on (../shared/peers' blas_probe: "kind" must be "openblas")."""
import os
import statistics
import sys
import time

import torch


def start(threads, peers, **versions):
    """Sets torch's threads and seed; returns the result dict with the BLAS torch runs on."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    res = {"framework": "pytorch-python-eager", "torch": torch.__version__, **versions,
           "threads": torch.get_num_threads()}
    sys.path.insert(0, os.path.join(peers, "pytorch"))
    try:
        from bench_torch import blas_probe
        blas_probe(res)
    except ImportError as e:
        res["blas"] = {"kind": "unknown", "error": str(e)}
    return res


def median_ms(fn, warmup, steps):
    """Median milliseconds of fn() over `steps` calls after `warmup` calls."""
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)
