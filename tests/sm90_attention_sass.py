"""Child process of test_attention's sm_90 check (the kernels must be JIT functions, not the interpreter's): compiles
the attention kernel of gpt-oss's window layers (D 64, sinks, lse, both edges masked) for sm_90 with each
configuration given as JSON on the command line, with TMA descriptors made on the host (contiguous [B, H, S, D]) and
in the kernel (Hugging Face's [B, S, H, D] memory), and prints, as JSON, each one's clobbered MMA operands
(rooftop.profile.kernels.clobbered_mma_operands) of both compiles."""
import json
import sys

from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile

from rooftop.ops.attention import AttentionConfig, _attention_fwd_kernel
from rooftop.profile.kernels import clobbered_mma_operands


def findings(config: AttentionConfig, host_descriptors: bool) -> list[str]:
    rows = config.block_m // config.heads
    boxes = dict(q=[1, config.heads, rows, 64], o=[1, config.heads, rows, 64], k=[1, 1, config.block_n, 64],
                 v=[1, 1, config.block_n, 64]) if host_descriptors else {}
    pointers = dict(q="*bf16", k="*bf16", v="*bf16", o="*bf16", lse="*fp32", sinks="*bf16", cu_seqlens_q="*i32",
                    cu_seqlens_k="*i32")
    constexprs = dict(D=64, BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_D=64, VARLEN=False, MASK_LEFT=True,
                      MASK_RIGHT=True, WRITE_LSE=True, USE_TMA=True, SINKS=True, SOFTCAP=False, PRECISION="tf32",
                      HEADS=config.heads, SINGLE_LOOP=config.single_loop, MASK_PTX=True)
    signature = {name: "constexpr" if name in constexprs else f"tensordesc<bf16{boxes[name]}>" if name in boxes
                 else pointers.get(name, "fp32" if name in ("qk_scale", "softcap") else "i32")
                 for name in _attention_fwd_kernel.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(_attention_fwd_kernel.arg_names)
             if signature[name].startswith("*") or "stride" in name}
    options = dict(num_warps=config.num_warps, num_stages=config.num_stages,
                   **({"maxnreg": config.maxnreg} if config.maxnreg else {}))
    compiled = compile(ASTSource(_attention_fwd_kernel, signature, constexprs, attrs),
                       target=GPUTarget("cuda", 90, 32), options=options)
    return [f"{'host' if host_descriptors else 'in-kernel'} descriptors: {finding}"
            for finding in clobbered_mma_operands(compiled.asm["cubin"])]


if __name__ == "__main__":
    configs = [AttentionConfig(**c) for c in json.loads(sys.argv[1])]
    print(json.dumps([findings(c, True) + findings(c, False) for c in configs]))
