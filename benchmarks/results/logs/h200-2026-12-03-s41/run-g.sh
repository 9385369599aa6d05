# session 41, call g: arrival counters first asked for inside a CUDA-graph capture, zeroed at once (NOTES Next 4 of
# session 41). 1. the hazard as it was: the zeroing captured (the old code's torch.zeros in the capture), the
# counters looked at before the graph replays; 2. GPU tests of the capture, plan and counters paths.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/run-g.tgz -C $OUT w; }
timeout 60 python - <<'PY' > $W/hazard.txt 2>&1
import torch
from rooftop.ops import _support
device = torch.device("cuda", 0)
for name, zero in (("captured zeroing (before)", lambda c: c.zero_()), ("zeroed at once (now)", None)):
    _support._counters.clear()
    if zero is not None:
        _support._zeroed_at_once, keep = zero, _support._zeroed_at_once
    pool = torch.cuda.graph_pool_handle()
    g0 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g0, pool=pool):
        filled = [torch.full((1 << 18,), 7, device=device, dtype=torch.int32) for _ in range(2)]
    g0.replay(); torch.cuda.synchronize(); del filled
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1, pool=pool):
        c = _support.arrival_counters(device, 100)
    torch.cuda.synchronize()
    print(name, "before any replay: counters", c[:4].tolist(), "nonzero", int((c != 0).sum()))
    if zero is not None:
        _support._zeroed_at_once = keep
PY
echo "hazard rc $?"; cat $W/hazard.txt | tail -3; pack
timeout -s INT 200 python -m pytest -q -p no:cacheprovider -n 12 --timeout 150 -rfE tests/test_plans.py \
    tests/test_split_rows.py tests/test_quant_matmul.py tests/test_decode_attention.py \
    -k "counters or capture or graph or pdl or split_rows or many_rows" > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200; pack
