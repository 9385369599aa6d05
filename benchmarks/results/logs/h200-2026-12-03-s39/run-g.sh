# session 39, call g (~4 minutes): softmax's reload kernel to 128 KB rows, one program an SM past 96 KB, unmasked
# where N is a multiple of the tile (NOTES item 257): its GPU tests, exp_softmax_mufu.py beside it at 57344 / 65536,
# fp32 rows of 32768 with it and without, and the results rows softmax / log_softmax 2048 x 65536.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/mufu $W/session
timeout -s INT 90 python -m pytest -v -p no:cacheprovider -n 12 --timeout 80 -rfE tests/test_softmax.py \
    -k "reload or dispatch" > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200
timeout 60 python benchmarks/exp_softmax_mufu.py $W/mufu --widths 57344,65536 > $W/mufu/log.txt 2>&1
echo "mufu rc $?"; sed -n '/^copy/,$p' $W/mufu/log.txt
timeout 40 python - > $W/fp32.txt 2>&1 <<'PY'
import torch, rooftop
from exp_norm_reload import copy_bandwidth, measured, patched
from rooftop.ops import softmax as sm
gbps = copy_bandwidth()
x = torch.randn(4096, 32768, device="cuda")
ref = torch.softmax(x, -1)
measured("softmax_fp32", 32768, "reload_one_program", lambda: rooftop.softmax(x), ref, 2 * x.nbytes, gbps)
with patched(sm, RELOAD_MAX_BYTES=98304):
    measured("softmax_fp32", 32768, "before", lambda: rooftop.softmax(x), ref, 2 * x.nbytes, gbps)
PY
echo "fp32 rc $?"; cat $W/fp32.txt | cut -c1-200
tar czf $OUT/run-g-1.tgz -C $OUT w
timeout 200 python benchmarks/gpu_session.py $W/session --families softmax --ops softmax,log_softmax \
    --widths 65536 --no-ncu > $W/session/log.txt 2>&1; echo "session rc $?"; grep -E "softmax " $W/session/log.txt | tail -12
tar czf $OUT/run-g-2.tgz -C $OUT w/session; rm -rf $W
