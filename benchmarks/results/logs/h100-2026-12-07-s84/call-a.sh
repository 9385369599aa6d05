# Session 84, call a (~6 min, any card): session 83's call a (bounds and heads-of-512 GPU tests, probe-d512.py, call e
# --fp8-first), then check_architectures.py --kv-fp8 in bf16 on the GPU (never run there; item 583's stock-with-e4m3
# column). One tarball $OUT/a.tgz rewritten after each step.
bash benchmarks/results/logs/h100-2026-12-07-s83/call-a.sh
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
timeout 170 python benchmarks/check_architectures.py /tmp/a/arch --kv-fp8 --dtype bfloat16 2>&1 \
  | grep "^|\|off by\|Error" > /tmp/a/arch.txt; tail -48 /tmp/a/arch.txt | cut -c1-230; tar czf $OUT/a.tgz -C /tmp a
