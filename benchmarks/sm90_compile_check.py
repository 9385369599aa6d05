"""Offline sm_90 compile of row-norm, GEMM and attention kernels (no GPU needed): Triton compiles for
Hopper and ptxas reports registers, spills (STACK) and shared memory. Catches what the interpreter
does not (e.g. a jit helper returning different types from two branches).
Usage: .venv/bin/python benchmarks/sm90_compile_check.py   (from the repo root)"""
import os
import re
import subprocess
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
sys.path.insert(0, "src")
from rooftop.ops import (activations as ac, attention as at, decode_attention as da, layer_norm as ln, matmul as mm,
                         moe, rms_norm as rn, softmax as sm)
BIN = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/"

def build(fn, types, consts, warps, stages=3, name="k", div=(), maxnreg=None):
    sig = {}
    for a in fn.arg_names:
        if a in consts: sig[a] = "constexpr"
        else: sig[a] = types(a)
    # pointers 16-byte aligned and N, the row strides and column offsets multiples of 16, as Triton specialises a launch
    # on aligned rows (without it the loads do not vectorise and the layouts differ from the GPU's)
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if sig[a].startswith("*") or (sig[a] == "i32" and (a in ("N", "K", "k_split", "b_col", *div) or "stride" in a))}
    c = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps, num_stages=stages,
                                                                      **({"maxnreg": maxnreg} if maxnreg else {})))
    open(f"/tmp/{name}.cubin", "wb").write(c.asm["cubin"])
    res = subprocess.run([BIN + "cuobjdump", "--dump-resource-usage", f"/tmp/{name}.cubin"], capture_output=True, text=True).stdout
    print(name, re.search(r"REG:\d+.*", res).group(0)[:80])

def row_types(a):
    if a.endswith("_ptr"): return "*fp32" if a == "scale_ptr" else "*bf16"
    if a in ("eps", "w_offset"): return "fp32"
    return "i32"

for res in (False, True):
    for quant, qmax in ((0, 1.0), (1, 448.0)):
        types = (lambda a: "*fp8e4nv" if a == "y_ptr" else row_types(a)) if quant else row_types
        build(rn._rms_norm_looped_kernel, types, dict(HAS_RESIDUAL=res, HAS_WEIGHT=True, QUANT=quant, QMAX=qmax,
              TILE=rn.looped_config(1 << 20, bool(quant))[0], X_POLICY="evict_first", EVEN=True), 32,
              name=f"rms_looped_r{int(res)}_q{quant}")
    build(rn._rms_norm_onchip_kernel, row_types, dict(HAS_RESIDUAL=res, HAS_WEIGHT=True, QUANT=0, QMAX=1.0,
          BLOCK_M=1, BLOCK_N=4096, ), 8, name=f"rms_onchip_r{int(res)}")
for res in (False, True):
    build(ln._layer_norm_looped_kernel, lambda a: "*bf16" if a.endswith("_ptr") else ("fp32" if a == "eps" else "i32"),
          dict(HAS_RESIDUAL=res, HAS_WEIGHT=True, HAS_BIAS=True, TILE=16384, GROUP=8, X_AHEAD=1 if res else 2,
               X_POLICY="evict_first", EVEN=True), 32, name=f"ln_looped_r{int(res)}")
for tile, warps in ((8192, 16), (4096, 8)):
    build(sm._softmax_looped_kernel, lambda a: "*bf16" if a.endswith("_ptr") else "i32",
          dict(LOG=False, TILE=tile, EVEN=True), warps, name=f"softmax_looped_{tile}")
mm_types = lambda a: ("*fp32" if "scale" in a else "*bf16") if a.endswith("_ptr") else "i32"
build(mm._matmul_tma_kernel, mm_types, dict(A_K_MAJOR=True, B_K_MAJOR=True, HAS_SCALES=False, HAS_BIAS=True,
      ACTIVATION="silu", HAS_RESIDUAL=True, INPUT_PRECISION="tf32", BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
      EPILOGUE_SUBTILE=True, RESIDUAL_TMA=True, NUM_SMS=132, APPROX=True), 8, 3, name="mm_tma")
build(mm._matmul_tma_kernel, mm_types, dict(A_K_MAJOR=False, B_K_MAJOR=False, HAS_SCALES=False, HAS_BIAS=False,
      ACTIVATION=None, HAS_RESIDUAL=False, INPUT_PRECISION="tf32", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
      EPILOGUE_SUBTILE=False, RESIDUAL_TMA=False, NUM_SMS=132, APPROX=True), 8, 3, name="mm_tma_mn")
def at_types(a):
    if a in ("q", "k", "v", "o"): return "*bf16"
    if a == "lse": return "*fp32"
    if a == "sinks": return "*bf16"
    if a.startswith("cu_seqlens"): return "*i32"
    return "fp32" if a in ("qk_scale", "softcap") else "i32"
for causal in (False, True):
    build(at._attention_fwd_kernel, at_types, dict(D=128, BLOCK_M=128, BLOCK_N=128, BLOCK_D=128, VARLEN=causal,
          MASK_LEFT=False, MASK_RIGHT=causal, WRITE_LSE=True, USE_TMA=False, SINKS=False, SOFTCAP=False,
          PRECISION="tf32", HEADS=1, SINGLE_LOOP=False, MASK_PTX=True), 8, 2,
          name=f"attn_ptr_c{int(causal)}")
for sinks, softcap in ((False, False), (True, False), (False, True)):  # gpt-oss's sliding-window layers (D 64, both
    # edges masked, its sinks or none), Gemma 2's soft-capped ones
    build(at._attention_fwd_kernel, at_types, dict(D=64, BLOCK_M=128, BLOCK_N=64, BLOCK_D=64, VARLEN=False,
          MASK_LEFT=True, MASK_RIGHT=True, WRITE_LSE=False, USE_TMA=False, SINKS=sinks, SOFTCAP=softcap,
          PRECISION="tf32", HEADS=1, SINGLE_LOOP=False, MASK_PTX=True), 4, 3,
          name=f"attn_window_d64_sinks{int(sinks)}_softcap{int(softcap)}")
for heads, block_n in ((4, 32), (4, 64), (2, 64)):  # several query heads' rows a tile (TMA made in-kernel)
    build(at._attention_fwd_kernel, at_types, dict(D=64, BLOCK_M=128, BLOCK_N=block_n, BLOCK_D=64, VARLEN=False,
          MASK_LEFT=True, MASK_RIGHT=True, WRITE_LSE=False, USE_TMA=True, SINKS=True, SOFTCAP=False,
          PRECISION="tf32", HEADS=heads, SINGLE_LOOP=False, MASK_PTX=True), 8, 3,
          name=f"attn_window_d64_heads{heads}_n{block_n}")
for heads, block_m, warps, single in ((4, 128, 8, False), (2, 64, 4, True)):  # host-made 4-D descriptors
    boxes = dict(q=[1, heads, 32, 64], o=[1, heads, 32, 64], k=[1, 1, 64, 64], v=[1, 1, 64, 64])
    build(at._attention_fwd_kernel, lambda a, b=boxes: f"tensordesc<bf16{b[a]}>" if a in b else at_types(a),
          dict(D=64, BLOCK_M=block_m, BLOCK_N=64, BLOCK_D=64, VARLEN=False, MASK_LEFT=True, MASK_RIGHT=True,
               WRITE_LSE=True, USE_TMA=True, SINKS=True, SOFTCAP=False, PRECISION="tf32", HEADS=heads,
               SINGLE_LOOP=single, MASK_PTX=True), warps, 3,
          name=f"attn_window_d64_heads{heads}_host_single{int(single)}")
da_pointers = {"q": "*bf16", "k": "*bf16", "v": "*bf16", "o": "*bf16", "lse": "*fp32", "part_acc": "*fp32",
               "part_ml": "*fp32", "counters": "*i32", "seqlens": "*i32", "block_table": "*i32", "key_mask": "*u8",
               "key_bounds": "*i32", "sinks": "*bf16"}
for sinks in (False, True):  # decode attention: sinks, a soft cap and mask bounds or none, split (GROUP 8, D 64)
    build(da._decode_attention_kernel,
          lambda a: da_pointers.get(a, "fp32" if a in ("qk_scale", "softcap", "v_scale") else "i32"),
          dict(GROUP=8, BLOCK_M=16, BLOCK_N=128, BLOCK_D=64, HEAD_DIM=64, PAGE_SIZE=0, HAS_MASK=True, HAS_BOUNDS=sinks,
               SPLIT=True, MERGE_ROWS=8, MERGE_CHUNK=16, RETURN_LSE=False, PRECISION="tf32", SINKS=sinks, SOFTCAP=sinks,
               PDL=True), 4, 3,
          name=f"decode_attention_sinks{int(sinks)}_softcap{int(sinks)}_bounds{int(sinks)}")
split_types = lambda a: ("*fp32" if a in ("part_ptr", "scale_ptr") else "*i32" if a == "cnt_ptr" else "*i64" if a == "words_ptr"
                         else "*bf16") \
    if a.endswith("_ptr") else ("fp32" if a in ("eps", "w_offset") else "i32")
for res in (False, True):
    for quant, qmax in ((0, 1.0), (1, 448.0)):
        types = (lambda a: "*fp8e4nv" if a == "y_ptr" else split_types(a)) if quant else split_types
        build(rn._rms_norm_split_kernel, types, dict(HAS_RESIDUAL=res, HAS_WEIGHT=True, QUANT=quant, QMAX=qmax,
              CHUNK=rn.SPLIT_LAUNCH["CHUNK"], G_POW2=32), rn.SPLIT_LAUNCH["num_warps"], name=f"rms_split_r{int(res)}_q{quant}")
gated_types = lambda a: ("*fp8e4nv" if a == "q_ptr" else "*fp32" if a == "scale_ptr" else "*bf16") \
    if a.endswith("_ptr") else "i32"
for act in ("silu", "gelu", "none"):
    for N in (4096, 14336, 53248):  # two rows a program; Llama-3-8B's intermediate width; 405B's, 7 tiles read twice
        bm, tile, parts, warps = ac.quant_rows_config(4096, N)
        build(ac._gated_quant_kernel, gated_types, dict(ACT=act, APPROX=True, QUANT=1, QMAX=448.0, BLOCK_M=bm,
              TILE=tile, PARTS=parts, UNROLL=min(parts, ac.QUANT_UNROLL), MAX="max" if bm > 1 else "max_by_count",
              PDL=True), warps, name=f"{act}_fp8_{N}")
split_gated_types = lambda a: {"words_ptr": "*i64", "cnt_ptr": "*i32"}.get(a) or gated_types(a)
for act in ("silu", "none"):
    for quant, qmax in ((1, 448.0), (2, 127.0)):
        build(ac._gated_quant_split_kernel, lambda a: "*i8" if quant == 2 and a == "q_ptr" else split_gated_types(a),
              dict(ACT=act, APPROX=True, QUANT=quant, QMAX=qmax, CHUNK=ac.quant_split_chunk(131072, 2 if act == "none"
                   else 4), G_POW2=32), ac.QUANT_SPLIT_WARPS, name=f"{act}_split_q{quant}")
gemv_types = lambda a: {"a_ptr": "*fp8e4nv", "w_ptr": "*fp8e4nv", "out_ptr": "*bf16", "bias_ptr": "*bf16",
                        "ws_ptr": "*fp32", "cnt_ptr": "*i32"}.get(a, "*fp32" if a.endswith("_ptr") else "i32")
for block_n, block_k, stages, warps in mm.FP8_GEMV_CONFIGS:
    build(mm._fp8_gemv_kernel, gemv_types, dict(HAS_BIAS=True, SPLIT_K=8, EVEN=True, BLOCK_M=mm.FP8_GEMV_MAX_M,
          BLOCK_N=block_n, BLOCK_K=block_k, SUM_BATCH=4, PDL=False), warps, stages,
          name=f"fp8_gemv_{block_n}_{block_k}")
    if block_n == 64 and block_k == 256:
        sass = subprocess.run([BIN + "cuobjdump", "-sass", f"/tmp/fp8_gemv_{block_n}_{block_k}.cubin"],
                              capture_output=True, text=True).stdout
        print("  fp8 wgmma:", sass.count("QGMMA"), "byte loads:", sass.count("LDG.E.EF.U8"), "16-byte loads:",
              sass.count("LDG.E.EF.128"))
moe_pointers = {"idx_ptr": "*i64", "rw_ptr": "*fp32", "scale_ptr": "*fp32", "ws_ptr": "*fp32", "cnt_ptr": "*i32"}
moe_types = lambda a: moe_pointers.get(a, "*bf16" if a.endswith("_ptr") else "i32")
moe_fp8_types = lambda a: "*fp8e4nv" if a == "w_ptr" else moe_types(a)
# bf16 experts; fp8 and int8 ones with row scales (one launch for all); int4 words with group scales of 128
moe_cases = (("bf16", moe_types, 0), ("fp8", moe_fp8_types, 0),
             ("int8", lambda a: "*i8" if a == "w_ptr" else moe_types(a), 0),
             ("int4", lambda a: "*i32" if a == "w_ptr" else moe_types(a), 128))
for codes, types, group_size in moe_cases:
    scaled = codes in ("fp8", "int8")
    (n, k, w), (dn, dk, dw, _) = ((moe.INT4_GATE_UP_LAUNCH, moe.INT4_DOWN_LAUNCH) if codes == "int4"
                                  else (moe.GATE_UP_LAUNCH, moe.DOWN_LAUNCH))
    gu_stages, down_stages = moe.PER_PAIR_STAGES["int4" if codes == "int4" else "codes" if scaled else "float"]
    for act, bias, (alpha, limit) in (("silu", False, (0.0, 0.0)), ("swiglu_oai", True, (1.702, 7.0))):  # gpt-oss's
        build(moe._moe_gate_up_kernel, types, dict(ACT=act, APPROX=True, SCALED=scaled, GROUP_SIZE=group_size,
              FOLD=True, HAS_BIAS=bias, ALPHA=alpha, LIMIT=limit, BLOCK_N=n, BLOCK_K=k, STAGES=gu_stages,
              PDL=True), w,
              name=f"moe_gate_up_{codes}_{act}", div=("H", "I"))
        for splits in (1, 3):
            build(moe._moe_down_kernel, types, dict(SCALED=scaled, GROUP_SIZE=group_size, FOLD=True, HAS_BIAS=bias,
                  BLOCK_N=dn, BLOCK_K=dk, SPLITS=splits, SUM_BATCH=splits, STAGES=down_stages,
                  PDL=True), dw,
                  name=f"moe_down_{codes}_bias{int(bias)}_s{splits}", div=("H", "I"))
        # the grouped path: 16 and 128 pairs a step (PAIRS), Mixtral's top 2 and Qwen3's top 8 with up to 8 ranges
        # (int4 with bf16 x: PAIRED, mma.sync from registers at its own launch)
        paired = codes == "int4"
        gn, gk, gw, cap = moe.INT4_GROUPED_LAUNCH if paired else (*moe.GROUPED_LAUNCH, None)
        for pairs, top_k, splits in ((16, 2, 8), (128, 8, 8)):
            common = dict(SCALED=scaled, GROUP_SIZE=group_size, FOLD=True, PAIRED=paired, EVEN_K=True, HAS_BIAS=bias,
                          PRECISION="tf32", PAIRS=pairs, GROUP=moe.GROUP, BLOCK_N=gn, BLOCK_K=gk,
                          L2_256B=moe.INT4_L2_256B, PDL=True)
            build(moe._moe_gate_up_grouped_kernel, types, dict(common, ACT=act, APPROX=True, ALPHA=alpha, LIMIT=limit),
                  gw, name=f"moe_gate_up_grouped_{codes}_{act}_p{pairs}", div=("H", "I"), maxnreg=cap)
            build(moe._moe_down_grouped_kernel, types, dict(common, TOP_K=top_k, SPLITS=splits), gw,
                  name=f"moe_down_grouped_{codes}_bias{int(bias)}_p{pairs}", div=("H", "I"), maxnreg=cap)
        if paired:  # a pair a program by mma.sync (INT4_PAIR_MMA_LAUNCH)
            mw, mdw, _, _, _ = moe.INT4_PAIR_MMA_LAUNCH
            for k_warps in (1, 4):  # warps a row tile (_pair_mma_split)
                build(moe._moe_gate_up_mma_kernel, types, dict(ACT=act, APPROX=True, GROUP_SIZE=group_size,
                      HAS_BIAS=bias, ALPHA=alpha, LIMIT=limit, BLOCK_N=16 * mw, K_WARPS=k_warps,
                      L2_256B=moe.INT4_L2_256B, PDL=True), mw * k_warps, name=f"moe_gate_up_mma_{act}_k{k_warps}",
                      div=("H", "I"))
            # PAIR_WARPS: warps a tile over the k pairs; EARLY: the first weights before the PDL wait; AHEAD: k-steps
            # of weights ahead, with a register cap (INT4_DOWN_AHEAD)
            for splits, pair_warps, early, (ahead, cap) in ((1, 1, True, (1, None)), (3, 1, True, (1, None)),
                                                            (3, 8, True, (1, None)), (3, 8, False, (1, None)),
                                                            (3, 8, True, (2, 80)), (3, 2, True, (2, 80))):
                build(moe._moe_down_mma_kernel, types, dict(GROUP_SIZE=group_size, HAS_BIAS=bias, SPLITS=splits,
                      SUM_BATCH=splits, BLOCK_N=16 * mdw, PAIR_WARPS=pair_warps, L2_256B=moe.INT4_L2_256B,
                      EARLY=early, AHEAD=ahead, PDL=True), mdw * pair_warps,
                      name=f"moe_down_mma_bias{int(bias)}_s{splits}_w{pair_warps}_e{int(early)}_a{ahead}",
                      div=("H", "I"), maxnreg=cap)
        # the sorted path (prefill) at its shipped launches
        sorted_types = lambda a: {"slot_pair_ptr": "*i32", "block_expert_ptr": "*i32"}.get(a, types(a))
        for block_m, (sn, sk, sw, ss), (sdn, sdk, sdw, sds) in moe.SORTED_LAUNCHES:
            common = dict(SCALED=scaled, GROUP_SIZE=group_size, FOLD=True, PAIRED=paired, EVEN_K=True, HAS_BIAS=bias,
                          PRECISION="tf32", BLOCK_M=block_m)
            build(moe._moe_gate_up_sorted_kernel, sorted_types, dict(common, ACT=act, APPROX=True, ALPHA=alpha,
                  LIMIT=limit, BLOCK_N=sn, BLOCK_K=sk), sw, ss, name=f"moe_gate_up_sorted_{codes}_{act}_m{block_m}",
                  div=("H", "I"))
            build(moe._moe_down_sorted_kernel, sorted_types,
                  dict(common, BLOCK_N=sdn, BLOCK_K=sdk), sdw, sds,
                  name=f"moe_down_sorted_{codes}_bias{int(bias)}_m{block_m}", div=("H", "I"))
# the sorted path's layout (256 bins: Qwen3's 128 experts) and its sum of a token's pairs
slot_types = lambda a: "*i64" if a == "idx_ptr" else ("*i32" if a.endswith("_ptr") else "i32")
build(moe._chunk_counts_kernel, slot_types, dict(BINS=256, CHUNK=moe.SLOTS_CHUNK), 4, name="moe_chunk_counts")
build(moe._chunk_offsets_kernel, slot_types, dict(BINS=256, BINS_A_PROGRAM=8, CHUNKS_A_STEP=moe.SLOTS_SCAN_STEP), 4,
      name="moe_chunk_offsets")
build(moe._sorted_slots_kernel, slot_types, dict(BLOCK_M=128, BINS=256, CHUNK=moe.SLOTS_CHUNK, PADS=16,
      BLOCKS_A_PASS=32), 4, name="moe_sorted_slots")
build(moe._sum_pairs_kernel, lambda a: "*bf16" if a.endswith("_ptr") else "i32",
      dict(BLOCK=1024), 4, name="moe_sum_pairs")
