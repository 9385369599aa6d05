"""Every launch candidate of quant_matmul (its regime's whole tensor-core table, a few extra GEMV and M <= 16
ones) timed on the GPU alone (graph replay,
L2 flushed: rooftop.ops._autotune.time_ms) at the benchmark shapes, beside cuBLAS bf16 F.linear timed the
same way: which configuration wins where, and by how much. Writes OUT/exp-quant-configs.json, prints a table.
Usage: PYTHONPATH=src python benchmarks/exp_quant_configs.py OUT [--ms 1,16] [--bits 4]"""
import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.ops import _autotune
from rooftop.ops import quant_matmul as qm

EXTRA_GEMV = ((256, 1, 4, 16, 1, 64), (128, 1, 4, 64, 1, 72), (256, 1, 2, 32, 1, 64), (256, 1, 4, 32, 3, 96),
              # more word rows a k-step: more 16-byte loads in flight a thread before it waits (session 10, not yet timed)
              (128, 1, 8, 32, 1, 96), (128, 1, 8, 16, 1, 96), (128, 1, 16, 16, 1, 128), (128, 1, 16, 8, 1, 128),
              (128, 1, 8, 32, 2, 96), (128, 2, 8, 16, 1, 96), (256, 2, 8, 16, 1, 96))
# tensor-core candidates beside the table's for M <= 16 (the int4 swap-AB tile is no longer issue-bound:
# more splits, deeper pipelines, 8 warps)
EXTRA_DOT = ((16, 128, 64, 4, 6), (16, 128, 128, 4, 3), (16, 256, 64, 8, 4), (16, 64, 128, 4, 5),
             (16, 128, 64, 4, 5, True, 96), (16, 64, 64, 4, 8),
             # 1-2 warps: mma.sync (m16n8k16) instead of wgmma, more, smaller programs an SM (offline sm_90: 96-238
             # registers; session 14)
             (16, 64, 64, 2, 4), (16, 32, 64, 1, 6), (16, 32, 64, 1, 4), (16, 64, 128, 2, 4), (16, 128, 64, 2, 4),
             (16, 32, 128, 1, 4))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ms", default="1,16,64,256")
    parser.add_argument("--bits", default="4,8")
    parser.add_argument("--budget", type=float, default=150.0)
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    start, rows = time.time(), []
    for bits in map(int, args.bits.split(",")):
        for M in map(int, args.ms.split(",")):
            for N, K in qm.BENCH_SHAPES:
                if time.time() - start > args.budget:
                    print(f"budget spent: M={M} N={N} K={K} bits={bits} left out")
                    continue
                x, qw, w = qm._make_inputs(bits)((M, N, K), torch.bfloat16, "cuda")
                configs = list(qm.candidates(M, N, K, bits, 128, x.dtype, sms))
                if M <= qm.GEMV_TRY_M:
                    configs += [qm._gemv(c, M, N, K, bits, 128, sms) for c in EXTRA_GEMV]
                table = next(t for top, t in qm.DOT_CONFIGS if M <= top) + (EXTRA_DOT if M <= 16 else ())
                configs += [d for d in (qm._dot(c, 128) for c in table) if d not in configs]
                ref = qm._reference(x, qw, w)
                cublas_us = _autotune.time_ms(lambda: F.linear(x, w)) * 1e3
                for config in configs:
                    run = lambda: qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, bits, 128)[0]  # noqa: E731
                    try:
                        err = float(torch.linalg.vector_norm(run().double() - ref) / torch.linalg.vector_norm(ref))
                        us = _autotune.time_ms(run) * 1e3
                    except Exception as e:  # a candidate that does not compile here is recorded, not fatal
                        rows.append(dict(bits=bits, M=M, N=N, K=K, config=config, error=str(e)[:200]))
                        continue
                    rows.append(dict(bits=bits, M=M, N=N, K=K, config=config, us=us, cublas_us=cublas_us, rel_err=err))
                del x, qw, w
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "exp-quant-configs.json").write_text(json.dumps(rows, indent=1))
    best = {}
    for r in rows:
        if "us" in r and r["rel_err"] < 1e-2:
            key = (r["bits"], r["M"], r["N"], r["K"])
            if key not in best or r["us"] < best[key]["us"]:
                best[key] = r
    for (bits, M, N, K), r in sorted(best.items()):
        c = {k: v for k, v in r["config"].items() if k not in ("BLOCK_M",)}
        print(f"int{bits} {M:4d}x{N}x{K}: best {r['us']:7.1f} us  x{r['cublas_us'] / r['us']:.2f} cublas "
              f"({r['cublas_us']:.1f} us)  {c}")


if __name__ == "__main__":
    main()
