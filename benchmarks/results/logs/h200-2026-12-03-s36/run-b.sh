# session 36, call b: 1. rms_norm's looped kernel, the next tile's load first (LOOPED_LOAD_FIRST) or after, and the
# reload kernel with pass 1 summed per tile or into one vector (RELOAD_ONE_SUM), against the library's path, at
# 32768-262144; 2. the reductions re-measured (the looped path's new load order);
# 3. the whole GPU suite again, verbose (call a's run stopped at its limit past 96%, 2 failures unnamed).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python - <<'PY' 2>&1 | tee $OUT/rms-looped-ab.txt
import torch, rooftop
from rooftop.ops import rms_norm as rn, _support
from rooftop.bench.timing import graph_replay_us
MODES = {  # module settings a mode patches (the library's are restored after each)
    "library": {},
    "looped first": dict(GLUON_ENABLED=False, RELOAD_MAX_N=0, LOOPED_LOAD_FIRST=True),
    "looped after": dict(GLUON_ENABLED=False, RELOAD_MAX_N=0, LOOPED_LOAD_FIRST=False),
    "reload": dict(GLUON_ENABLED=False, RELOAD_MAX_N=65536, RELOAD_RESIDUAL=True, RELOAD_ONE_SUM=False),
    "reload one sum": dict(GLUON_ENABLED=False, RELOAD_MAX_N=65536, RELOAD_RESIDUAL=True, RELOAD_ONE_SUM=True),
}
library = {k: getattr(rn, k) for mode in MODES.values() for k in mode}
print("rms_norm bf16, M * N = 2^27: GPU us (graph replay over 2 inputs), % of a 4220 GB/s copy by the op's bytes:",
      " / ".join(MODES))
for n in (32768, 65536, 131072, 262144):
    m = 2 ** 27 // n
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    for res in (False, True):
        xs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        rs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)] if res else [None, None]
        calls = [lambda x=x, r=r: rooftop.rms_norm(x, w, 1e-6, residual=r) for x, r in zip(xs, rs)]
        t = []
        for name, mode in MODES.items():
            if name.startswith("reload") and n > 65536:
                t.append(float("nan"))
                continue
            for k, v in {**library, **mode}.items():
                setattr(rn, k, v)
            _support.SPLIT_ROWS_ENABLED = not name.startswith("looped")
            _support.clear_plans()
            t.append(graph_replay_us(calls, repeat=10))
        for k, v in library.items():
            setattr(rn, k, v)
        _support.SPLIT_ROWS_ENABLED = True
        nbytes = m * n * 2 * (4 if res else 2)
        print(f"N {n} residual {res}:", " / ".join(f"{v:.1f} ({nbytes / v / 1e3 / 4220 * 100:.1f}%)" for v in t))
PY
timeout 200 python benchmarks/gpu_session.py $OUT/results --families reductions --no-ncu \
    > $OUT/session-reductions.log 2>&1; echo "reductions session rc $?"
grep -a -E "^row_[a-z]+ +[0-9]" $OUT/session-reductions.log | sed -E 's/ +\|.*//' | cut -c1-120
rm -f $OUT/results/*.csv
timeout -s INT 380 python -m pytest -v -p no:cacheprovider -n 12 --timeout 240 -rfE tests/ > $OUT/tests/all.txt 2>&1
echo "suite rc $?: $(tail -1 $OUT/tests/all.txt)"
grep -E "^(FAILED|ERROR)" $OUT/tests/all.txt | cut -c1-300 | head -30
grep -E "\] (FAILED|ERROR) " $OUT/tests/all.txt | cut -c1-200 | head -30
grep -c "PASSED" $OUT/tests/all.txt
