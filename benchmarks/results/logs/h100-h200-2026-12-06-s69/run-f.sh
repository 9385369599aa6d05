# Session 69 call f (~4 min, asked of an H200: the anchors' card). The MoE registry rows of sessions 65-69's work
# (bf16 / int8 / fp8 / int4 experts, per-pair pipelines, the int4 mma kernels with the L2::256B hint) on the H200, in
# one run, after test_moe there. H100 (call e, graph replay): int4 one token of Mixtral's 88.1 us (70.8% of copy),
# int8 133.5 (88.0%), fp8 123.3 (95.3%), bf16 244.0 (96.3%). Predicted on the H200 (4.8 TB/s against 3.0): int4
# ~60-65 us, int8 ~90, bf16 ~165.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 100 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
(cd $OUT/w && tar czf ../bench.tgz bench && rm -rf bench)
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
