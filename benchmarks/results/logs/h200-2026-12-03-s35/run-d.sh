# session 35, call d: a reload LayerNorm (one row a 32-warp program, statistics in one pass about the first tile's
# mean, pass 2 re-loading the row from L1 / L2; rms_norm's reload kernel's shape) against the Gluon path at 24K-64K:
# GPU tests, then an A / B of its launch shapes
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_layer_norm.py -k "not gluon and not past_2_31" \
    > $OUT/tests/test_layer_norm.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_layer_norm.txt)"; grep "^FAILED" $OUT/tests/test_layer_norm.txt | cut -c1-200 | head
timeout 200 python - <<'PY' 2>&1 | tee $OUT/ln-reload-ab.txt
import torch, rooftop
from rooftop.ops import layer_norm as ln, _support
from rooftop.ops.layer_norm import layer_norm_reference
from rooftop.bench.timing import graph_replay_us
variants = {"gluon (library)": dict(RELOAD_MAX_N=16384), "reload 32w 32KB": {}, "reload 16w 32KB": dict(RELOAD_WARPS=16),
            "reload 32w 64KB": dict(RELOAD_TILE_BYTES=65536), "reload 32w 16KB": dict(RELOAD_TILE_BYTES=16384)}
base = {k: getattr(ln, k) for k in ("RELOAD_MAX_N", "RELOAD_WARPS", "RELOAD_TILE_BYTES", "RELOAD_RESIDUAL")}
print("layer_norm (bf16, weight and bias, M N = 2^27): GPU us (graph replay over 2 inputs), % of a 4220 GB/s copy")
for n in (24576, 32768, 65536):
    m = (1 << 27) // n
    xs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    w = torch.rand(n, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out = []
    for name, v in variants.items():
        for k, val in {**base, "RELOAD_MAX_N": max(n, 32768), **v}.items():
            setattr(ln, k, val)
        _support.clear_plans()
        err = (rooftop.layer_norm(xs[0][:64], w, b).double() - layer_norm_reference(xs[0][:64], w, b)).norm() / \
            layer_norm_reference(xs[0][:64], w, b).norm()
        t = graph_replay_us([lambda x=x: rooftop.layer_norm(x, w, b) for x in xs], repeat=10)
        out.append(f"{name} {t:.1f} ({m * n * 4 / t / 1e3 / 4220 * 100:.1f}%, err {err:.1e})")
    print((m, n), " | ".join(out))
print("add_layer_norm at 32768: the on-chip kernel (library) / reload (RELOAD_RESIDUAL)")
m, n = 4096, 32768
xs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
rs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
out = []
for res_reload in (False, True):
    for k, val in {**base, "RELOAD_RESIDUAL": res_reload}.items():
        setattr(ln, k, val)
    _support.clear_plans()
    t = graph_replay_us([lambda x=x, r=r: rooftop.layer_norm(x, w, b, residual=r) for x, r in zip(xs, rs)], repeat=10)
    out.append(f"{t:.1f} ({m * n * 8 / t / 1e3 / 4220 * 100:.1f}%)")
print(" / ".join(out))
PY
