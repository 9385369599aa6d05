# Session 79's call c (~8 min; one tarball $OUT/c.tgz rewritten after each step): the window kernel's masked tiles in
# fewer instructions (item 551: the scale in the exp's FFMA, each row's key bounds made once, two compares chained and
# one select by inline PTX, the mask skipped on tiles every query sees whole): the attention tests, every window
# candidate forced with the PTX select and the tl.where one (--mask-ptx-ab), and the attention_sinks family tuned.
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/c; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/c.tgz -C /tmp c; }
timeout 200 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py tests/test_integrations.py \
  -k "attention or window or sink or gpt_oss" > $W/tests.txt 2>&1; tail -1 $W/tests.txt
grep FAILED $W/tests.txt | head; pack
timeout 170 python benchmarks/exp_attention_window.py $W --seqs 4096,16384 --mask-ptx-ab 2>&1 | grep -v Warn \
  > $W/exp.txt; tail -4 $W/exp.txt; pack
timeout 150 python benchmarks/gpu_session.py $W/sinks --families attention_sinks --no-ncu 2>&1 | grep -v Warn \
  > $W/sinks.txt; tail -14 $W/sinks.txt; pack
