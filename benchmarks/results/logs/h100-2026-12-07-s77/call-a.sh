# Session 77's first call (~4 min on an H100, ~8 on an H200; one tarball $OUT/a.tgz rewritten after each step):
# item 541's packed-head attention tiles (s76/next.sh: GPU tests, every candidate forced, registry rows with the
# packed candidates on); on an H200 also the MoE registry rows in four formats (s74/next.sh's H200 half).
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/a; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/a.tgz -C /tmp a; }
timeout 60 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py -k "packed or window" \
  > $W/tests.txt 2>&1; tail -2 $W/tests.txt; grep FAILED $W/tests.txt | head; pack
timeout 130 python benchmarks/exp_attention_window.py $W --seqs 512,16384 2>&1 | grep -v Warn > $W/exp.txt
tail -4 $W/exp.txt; pack
timeout 60 python -c "import sys, rooftop.ops.attention as a, rooftop.cli as c; a.PACK_WINDOWED_GQA = True
sys.exit(c.main(['bench', 'attention_sinks_window128', '--providers', 'rooftop', '--out', '/tmp/a/bench']))" 2>&1 \
  | grep -v Warn > $W/bench.txt; grep "│ att" $W/bench.txt; pack
case $GPU in *H200*) for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do
  timeout 55 python -m rooftop bench $op --providers rooftop --out $W/moe 2>&1 | grep -v Warn > $W/bench-$op.txt
  grep "│ moe" $W/bench-$op.txt; pack; done;; esac
