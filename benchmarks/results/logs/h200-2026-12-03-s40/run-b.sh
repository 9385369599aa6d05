# session 40, call b: 1. GPU tests of test_reductions.py (row_max's one NaN-keeping reduction) and test_softmax.py in
# full; 2. the looped reductions' launch sweep at 65536-262144 against torch.compile, and compile's kernel source for
# a [1024, 131072] row sum; 3. results rows: row_max at every width, softmax / log_softmax at 32768 and 65536.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/red $W/session
pack() { tar czf $OUT/run-b.tgz -C $OUT w; }
timeout -s INT 120 python -m pytest -v -p no:cacheprovider -n 12 --timeout 100 -rfE tests/test_reductions.py \
    tests/test_softmax.py > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200; pack
timeout 120 python benchmarks/exp_reduce_wide.py $W/red > $W/red/log.txt 2>&1; echo "red rc $?"
tail -8 $W/red/log.txt; pack
TORCH_LOGS=output_code timeout 45 python -c "
import torch
x = torch.randn(1024, 131072, device='cuda', dtype=torch.bfloat16)
torch.compile(lambda t: t.float().sum(-1).to(t.dtype))(x)" > $W/red/compile-code.txt 2>&1
grep -nE "def triton|num_warps|R0_BLOCK|RBLOCK|XBLOCK|grid" $W/red/compile-code.txt | head -20; pack
timeout 120 python benchmarks/gpu_session.py $W/session --families reductions --ops row_max --no-ncu \
    > $W/session/log-red.txt 2>&1; echo "session red rc $?"; grep -E "row_max " $W/session/log-red.txt | tail -12; pack
timeout 100 python benchmarks/gpu_session.py $W/session --families softmax --ops softmax,log_softmax \
    --widths 32768,65536 --no-ncu > $W/session/log-sm.txt 2>&1; echo "session softmax rc $?"
grep -E "softmax " $W/session/log-sm.txt | tail -6; pack
