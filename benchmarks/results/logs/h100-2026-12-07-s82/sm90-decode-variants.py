import os, re, subprocess, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
sys.path.insert(0, "src")
from rooftop.ops import decode_attention as da
BIN = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/"
def build(kv, mask, bounds, stages=3):
    ptr = {"q": "*bf16", "k": kv, "v": kv, "o": "*bf16", "lse": "*fp32", "part_acc": "*fp32",
           "part_ml": "*fp32", "counters": "*i32", "seqlens": "*i32", "block_table": "*i32", "key_mask": "*u8",
           "key_bounds": "*i32", "sinks": "*i32"}
    consts = dict(GROUP=4, BLOCK_M=16, BLOCK_N=128, BLOCK_D=128, HEAD_DIM=128, PAGE_SIZE=0, HAS_MASK=mask,
                  HAS_BOUNDS=bounds, SPLIT=True, MERGE_ROWS=4, MERGE_CHUNK=16, RETURN_LSE=False, PRECISION="tf32",
                  SINKS=False, SOFTCAP=False, PDL=True, Sq=1, row_tiles=1)
    fn = da._decode_attention_kernel
    sig = {a: "constexpr" if a in consts else ptr.get(a, "fp32" if a in ("qk_scale", "softcap", "v_scale") else "i32")
           for a in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if sig[a].startswith("*") or (sig[a] == "i32" and ("stride" in a or a == "capacity") and a != "stride_nb")}
    c = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, num_stages=stages))
    name = f"/tmp/da_{kv[1:]}_{int(mask)}{int(bounds)}_{stages}"
    open(name + ".cubin", "wb").write(c.asm["cubin"]); open(name + ".ttgir", "w").write(c.asm["ttgir"])
    res = subprocess.run([BIN + "cuobjdump", "--dump-resource-usage", name + ".cubin"], capture_output=True, text=True).stdout
    sass = subprocess.run([BIN + "cuobjdump", "-sass", name + ".cubin"], capture_output=True, text=True).stdout
    open(name + ".sass", "w").write(sass)
    print(kv, mask, bounds, stages, "smem", c.metadata.shared, re.search(r"REG:\d+.*", res).group(0)[:70], "LDGSTS", sass.count("LDGSTS"),
          "HMMA", sass.count("HMMA"), "lines", sass.count("\n"))
for kv in ("*fp8e4nv", "*bf16"):
    for mask, bounds in ((False, False), (True, False), (True, True)):
        build(kv, mask, bounds)
