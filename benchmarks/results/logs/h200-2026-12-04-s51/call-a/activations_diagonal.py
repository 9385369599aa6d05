import triton
import triton.language as tl
from rooftop.ops._support import await_previous


@triton.jit
def _reciprocal(x, APPROX: tl.constexpr):
    """1 / x; APPROX (on a GPU): one MUFU.RCP (rcp.approx, 1 ulp, subnormal results flushed to 0),
    where the division costs 7 instructions more an element (its range checks). Triton's interpreter
    runs no inline assembly."""
    if APPROX:
        return tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True,
                                         pack=1)
    else:
        return 1.0 / x


@triton.jit
def to_fp32(v):
    """v widened to fp32; bf16 through its bits, one shift or one mask an element (a cast takes a
    PRMT and a shift for every other element: 1.5)."""
    if v.dtype == tl.bfloat16:
        return (v.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    return v.to(tl.float32)


@triton.jit
def _activate(x, ACT: tl.constexpr, APPROX: tl.constexpr, TO_BF16: tl.constexpr):
    """act(x) for fp32 x, ACT one of "silu", "gelu" (erf), "gelu_tanh": one exp2 and one reciprocal
    each (APPROX: see _reciprocal). gelu's Phi to fp32's precision, or to bf16's where the result is
    rounded to bf16 (TO_BF16): the module docstring."""
    if ACT == "silu":
        return x * _reciprocal(1.0 + tl.exp2(-1.4426950408889634 * x), APPROX)
    elif ACT == "gelu_tanh":
        # x * sigmoid(2u): -2u log2(e) = x (-2.3022082 - 0.1029432 x^2); inf/-inf saturate to x / -0
        return x * _reciprocal(1.0 + tl.exp2(x * (-2.302208198144325 - 0.1029432395800235 * x * x)), APPROX)
    else:
        # relu(x) - v 2^(P(v) - x^2 log2(e) / 2), v = |x| / (1 + 0.27 |x|): the module docstring; |x| capped
        # so that v stays finite at +-inf (inf * 0 would make gelu(+inf) NaN)
        a = tl.minimum(tl.abs(x), 1e30)
        v = a * _reciprocal(1.0 + 0.27 * a, APPROX)
        if TO_BF16:
            p = 0.00257302097 + v * (-0.00145501876 + v * 0.000153262541)
            p = -0.999998361 + v * (-0.761645988 + v * (0.00439358005 + v * (0.0134218282 + v * p)))
        else:
            p = -0.000399308247 + v * (0.000116259542 + v * -9.93860558e-06)
            p = 0.00388080452 + v * (0.0148210232 + v * (0.00069628025 + v * (-8.71147627e-05 + v * p)))
            p = -0.999999985 + v * (-0.761574349 + v * p)
        return tl.maximum(x, 0.0) - v * tl.exp2(p - 0.7213475204444817 * x * x)


@triton.jit
def _act_rows_kernel(a_ptr, b_ptr, out_ptr, M, N, a_stride, b_stride, out_stride, ACT: tl.constexpr,
                     APPROX: tl.constexpr, BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     EVEN: tl.constexpr, PDL: tl.constexpr):
    # out = act(a) * b (b: rows like a), or with BIAS out = act(a + b) (b: one row of N, read once
    # per program, from L2). Reads a (and b) once, writes out once: 3 (BIAS: 2) * M * N * itemsize.
    # PDL: the launch overlaps the kernel before it (_support.pdl_options).
    await_previous(PDL)
    # EVEN (the tiles divide M and N): no masks, whose compares cost instructions the erf needs.
    # Which blocks run side by side, measured on the H200 (bf16, N >= 16384): gated, a row's column blocks
    # (a 1-D grid: swiglu_packed 100% of copy, 96% with the row blocks adjacent); bias, the row blocks (the
    # 2-D grid (row blocks, column blocks): bias_gelu 90-92%, 79-83% on a 1-D grid, either order).
    if BIAS:
        row_block = tl.program_id(0)
        col_block = (tl.program_id(1) + row_block) % tl.num_programs(1)
    else:
        col_blocks = tl.cdiv(N, BLOCK_N)
        row_block, col_block = tl.program_id(0) // col_blocks, tl.program_id(0) % col_blocks
    rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = col_block * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = None if EVEN else (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)
    a = to_fp32(tl.load(a_ptr + rows[:, None] * a_stride + cols[None, :], mask=mask))
    if BIAS:
        bias = to_fp32(tl.load(b_ptr + cols, mask=None if EVEN else cols < N))
        y = _activate(a + bias[None, :], ACT, APPROX, out_ptr.dtype.element_ty == tl.bfloat16)
    else:
        b = to_fp32(tl.load(b_ptr + rows[:, None] * b_stride + cols[None, :], mask=mask))
        y = _activate(a, ACT, APPROX, out_ptr.dtype.element_ty == tl.bfloat16) * b
    tl.store(out_ptr + rows[:, None] * out_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)
