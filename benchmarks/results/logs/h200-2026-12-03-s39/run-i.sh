# session 39, call i (~1 minute): softmax's reload kernel with masks on its last tile only (NOTES item 259): its GPU
# tests, and at 57360 / 61440 (last tile partial) one program an SM against two and against the Gluon ring; 65536.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
timeout -s INT 50 python -m pytest -v -p no:cacheprovider -n 12 --timeout 40 -rfE tests/test_softmax.py \
    -k "reload or dispatch" > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200
timeout 60 python - > $W/tail.txt 2>&1 <<'PY'
import torch, rooftop
from exp_norm_reload import ELEMENTS, copy_bandwidth, measured, patched
from rooftop.ops import softmax as sm
gbps = copy_bandwidth()
for N in (57360, 61440, 65536):
    x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
    ref = torch.softmax(x.float(), -1).to(x.dtype)
    measured("softmax", N, "library", lambda: rooftop.softmax(x), ref, 2 * x.nbytes, gbps)
    with patched(sm, RELOAD_ONE_PROGRAM_MIN_BYTES=1 << 20):
        measured("softmax", N, "two_programs", lambda: rooftop.softmax(x), ref, 2 * x.nbytes, gbps)
    with patched(sm, RELOAD_MAX_BYTES=114688):
        measured("softmax", N, "gluon", lambda: rooftop.softmax(x), ref, 2 * x.nbytes, gbps)
PY
echo "tail rc $?"; cut -c1-140 $W/tail.txt
tar czf $OUT/run-i.tgz -C $OUT w; rm -rf $W
