import sys, torch, rooftop, json
sys.path.insert(0, "benchmarks")
from tune_rowops import run_looped, run_onchip, M_TIMES_N
from rooftop.ops import softmax as sm
out=[]
for N in (16384, 32768, 65536, 131072, 262144):
    x = torch.randn(M_TIMES_N // N, N, device="cuda", dtype=torch.bfloat16)
    rows = run_looped(sm, lambda: rooftop.softmax(x), N, 2)
    rows.sort(key=lambda r: -r["GBps"])
    print(N, " | ".join(f"{r['tile']}/{r['warps']}/{r['pps']}:{r['GBps']:.0f}" for r in rows[:6]), flush=True)
    out += rows
json.dump(out, open(sys.argv[1], "w"))
