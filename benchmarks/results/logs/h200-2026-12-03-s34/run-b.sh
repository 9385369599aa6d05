# session 34, call b: the tinygemm peer re-measured (call a's session was cut by its timeout while writing); row_argmax's
# on-chip launch shape (elements a thread, elements a program) at each width, graph replay over a 256 MB input
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 130 python - <<'PY' 2>&1 | tee $OUT/argmax-onchip-shapes.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
from rooftop.hardware import measure_ceilings
copy = measure_ceilings().copy_GBps
print(f"copy {copy:.0f} GB/s; % of copy for (elements a thread, elements a program)")
shapes = [(8, 4096), (16, 4096), (32, 4096), (16, 8192), (16, 16384), (32, 16384), (8, 16384)]
print("N      " + "  ".join(f"{e:>2}/{b:<5}" for e, b in shapes))
for N in (512, 1024, 2048, 4096, 8192, 16384, 32768):
    x = torch.randn((1 << 27) // N, N, device="cuda", dtype=torch.bfloat16)
    cells = []
    for ept, be in shapes:
        reductions.ONCHIP_ELEMS_PER_THREAD, reductions.ONCHIP_BLOCK_ELEMS = ept, be
        _support.clear_plans()
        us = graph_replay_us([lambda: rooftop.row_argmax(x)], repeat=20)
        cells.append(100 * x.numel() * 2 / (us * 1e-6) / 1e9 / copy)
    print(f"{N:<6} " + "  ".join(f"{c:8.1f}" for c in cells))
PY
timeout 300 python benchmarks/gpu_session.py $OUT/tinygemm --families quant_matmul --ops quant_matmul_int4 \
    --providers tinygemm,cublas --no-ncu > $OUT/session-tinygemm.log 2>&1; echo "tinygemm session rc $?"
grep -a "graph" $OUT/session-tinygemm.log | sed -E 's/ +\|.*//' | cut -c1-150 | tail -16
rm -f $OUT/tinygemm/*.csv
