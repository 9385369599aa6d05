# Session 62, call f (~8 min): moe_experts' grouped path (journal 434: each routed expert read once a step; dispatch
# _takes_grouped: k T >= E or H I >= 2^23), the quantized experts on the bf16 launch, and the sweep's host-sync check
# (journal 435: call d's "Offset increment outside graph capture"). 1. test_moe + test_integrations + test_bench under
# -n 8 (predicted all pass, the 48 / 10 failures of calls d-e gone); 2. exp_moe_grouped.py (both paths of the op);
# 3. the moe family's rows; 4. the Mixtral-shaped model with --fp8, batch 1 and 8. Predicted (H100): grouped as in
# call b (Mixtral 8-16 tokens ~100% of the floor, 1 token ~245 us); model batch 1 bf16 patched 565 -> 575-600 tok/s
# (its experts 1.10x at one token), batch 8 1453 -> 1700-1900 (16 pairs on 8 experts now read once), fp8 810 -> 830+.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 110 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py \
  tests/test_bench.py 2>&1 | grep -v Warn > $OUT/w/tests.txt
grep -n "^E \|Error" $OUT/w/tests.txt | head -20; tail -4 $OUT/w/tests.txt
timeout 120 python benchmarks/exp_moe_grouped.py $OUT/w 2>&1 | grep -v Warn | tee $OUT/w/exp.txt | tail -60
timeout 100 python benchmarks/gpu_session.py $OUT/w/session --families moe --no-ncu 2>&1 | grep -v Warn | tail -20
timeout 130 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --layers 4 \
  --repeats 1 2>&1 | grep -v Warn | tail -7
timeout 125 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --moe --no-int4 --fp8 --layers 4 \
  --batch 8 --repeats 1 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-f.tgz -C $OUT w
