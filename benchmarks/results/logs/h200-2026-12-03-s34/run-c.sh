# session 34, call c: row_argmax with its final on-chip launch shape (32 elements a thread up to 8192 columns): GPU
# tests, its sweep and the greedy table (into the reductions results), Nsight Compute on chip and looped
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_reductions.py > $OUT/tests/test_reductions.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_reductions.txt)"; grep "^FAILED" $OUT/tests/test_reductions.txt | cut -c1-200 | head
timeout 150 python benchmarks/gpu_session.py $OUT/argmax --families reductions --ops row_argmax --no-ncu \
    > $OUT/session-argmax.log 2>&1; echo "argmax session rc $?"
grep -a -E "^row_argmax " $OUT/session-argmax.log | sed -E 's/ +\|.*//' | cut -c1-110
timeout 150 python - <<'PY' 2>&1 | tee $OUT/ncu-argmax.txt
import json, os
from rooftop.profile.ncu import profile_op
out = []
for op, shape in (("row_argmax", (32768, 4096)), ("row_argmax", (8192, 16384)), ("row_argmax", (2048, 65536))):
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
rm -f $OUT/argmax/*.csv
