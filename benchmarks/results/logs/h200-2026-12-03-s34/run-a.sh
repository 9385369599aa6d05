# session 34, call a: row_argmax a 16-byte vector at a time (GPU tests, split / on-chip A/B at few rows, its sweep and
# the greedy table, Nsight Compute); the tinygemm peer re-measured (graph replay had timed its weight conversion)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_reductions.py > $OUT/tests/test_reductions.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_reductions.txt)"; grep "^FAILED" $OUT/tests/test_reductions.txt | cut -c1-200 | head
timeout 90 python -m pytest -q -p no:cacheprovider tests/test_quant_matmul.py -k "tinygemm" > $OUT/tests/test_tinygemm.txt 2>&1
echo "tinygemm tests rc $?: $(tail -1 $OUT/tests/test_tinygemm.txt)"
timeout 90 python - <<'PY' 2>&1 | tee $OUT/split-ab.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
print("shape: argmax split-rule us / on-chip us (graph replay)")
default = reductions.ARGMAX_SPLIT_MIN_N
for shape in [(1, 16384), (1, 32000), (1, 32768), (4, 32000), (8, 32768), (64, 32000)]:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    t = []
    for split_min in (default, 1 << 30):
        reductions.ARGMAX_SPLIT_MIN_N = split_min
        _support.clear_plans()
        t.append(graph_replay_us([lambda: rooftop.row_argmax(x)]))
    reductions.ARGMAX_SPLIT_MIN_N = default
    _support.clear_plans()
    print(shape, " / ".join(f"{v:.2f}" for v in t))
PY
timeout 100 python benchmarks/gpu_session.py $OUT/argmax --families reductions --ops row_argmax --no-ncu \
    > $OUT/session-argmax.log 2>&1; echo "argmax session rc $?"
grep -E "^row_argmax " $OUT/session-argmax.log | sed -E 's/ +\|.*//' | cut -c1-110
timeout 150 python benchmarks/gpu_session.py $OUT/tinygemm --families quant_matmul --ops quant_matmul_int4 \
    --providers tinygemm,cublas --no-ncu > $OUT/session-tinygemm.log 2>&1; echo "tinygemm session rc $?"
grep "graph" $OUT/session-tinygemm.log | sed -E 's/ +\|.*//' | cut -c1-150 | tail -16
timeout 150 python - <<'PY' 2>&1 | tee $OUT/ncu-argmax.txt
import json, os
from rooftop.profile.ncu import profile_op
out = []
for op, shape in (("row_argmax", (8192, 16384)), ("row_argmax", (2048, 65536))):
    try:
        r = profile_op(op, shape)
        r.update(op=op, provider="rooftop", shape=list(shape), dtype="bf16")
        out.append(r)
        print(op, shape, {k: r.get(k) for k in ("kernel", "duration_us", "dram_throughput_pct", "sm_throughput_pct",
                                                 "achieved_occupancy_pct", "registers_per_thread")})
    except Exception as e:
        print(op, shape, "failed:", str(e)[-300:])
json.dump(out, open(os.environ["OUT"] + "/ncu-argmax.json", "w"), indent=1)
PY
rm -f $OUT/argmax/*.csv $OUT/tinygemm/*.csv
