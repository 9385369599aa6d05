# session 39, call h (~2 minutes): the softmax reload GPU tests after the one-program threshold moved to 112 KB rows,
# the reload kernel at 65536 (one program an SM) masked against unmasked (why session 37 saw 70.5%), and a Nsight
# Compute reading of softmax 2048 x 65536 (the results file's was session 12's looped kernel).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
timeout -s INT 60 python -m pytest -v -p no:cacheprovider -n 12 --timeout 50 -rfE tests/test_softmax.py \
    -k "reload or dispatch" > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200
timeout 40 python - > $W/masks.txt 2>&1 <<'PY'
import torch
from exp_norm_reload import copy_bandwidth, measured
from rooftop.ops import softmax as sm
from rooftop.ops._support import launch
gbps = copy_bandwidth()
x = torch.randn(2048, 65536, device="cuda", dtype=torch.bfloat16)
ref = torch.softmax(x.float(), -1).to(x.dtype)
def run(even):
    y = torch.empty_like(x)
    launch(sm._softmax_reload_kernel, (2048,), x, y, 65536, x.stride(0), y.stride(0), LOG=False, TILE=8192, PARTS=8,
           EVEN=even, num_warps=32, maxnreg=64)
    return y
for even in (True, False):
    measured("softmax", 65536, f"reload_one_program_even_{even}", lambda e=even: run(e), ref, 2 * x.nbytes, gbps)
PY
echo "masks rc $?"; cut -c1-160 $W/masks.txt
timeout 120 python -c "
import json; from rooftop.profile.ncu import profile_op
print(json.dumps(profile_op('softmax', (2048, 65536), 'bf16', 'rooftop')))" > $W/ncu.json 2> $W/ncu.err
echo "ncu rc $?"; cut -c1-600 $W/ncu.json; tail -2 $W/ncu.err
tar czf $OUT/run-h.tgz -C $OUT w; rm -rf $W
