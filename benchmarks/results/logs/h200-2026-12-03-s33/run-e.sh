# session 33, call e: Nsight Compute readings of row_argmax (on chip and looped) against row_max at the same width
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 200 python - <<'PY' 2>&1 | tee $OUT/ncu-argmax.txt
import json, os
from rooftop.profile.ncu import profile_op
out = []
for op, shape in (("row_argmax", (8192, 16384)), ("row_max", (8192, 16384)), ("row_argmax", (2048, 65536))):
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
