# Session 62, call e (~4 min): which test leaves the CUDA generator mid-capture ("Offset increment outside graph capture"
# on one worker in call d): test_moe.py serially with -x, -p no:randomly; then the fp8 MoE model at batch 8.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -v -p no:logging --tb=short tests/test_moe.py tests/test_integrations.py 2>&1 \
  | grep -v Warn > $OUT/w/tests-serial.txt
grep -n "FAIL\|^E " $OUT/w/tests-serial.txt | head -20; tail -2 $OUT/w/tests-serial.txt
timeout 200 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --moe --no-int4 --fp8 --layers 4 \
  --batch 8 --repeats 1 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-e.tgz -C $OUT w
