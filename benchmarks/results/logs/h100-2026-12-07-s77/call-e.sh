# Session 77's last call (~2 min, ~400 s of device time left): item 543's single-loop tiles, their GPU tests and
# every candidate forced at S = 16384 (call d cut: its machine was taken back). One tarball $OUT/e.tgz.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/e; mkdir -p $W; pack() { tar czf $OUT/e.tgz -C /tmp e; }
timeout 60 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py -k "packed or single" \
  > $W/tests.txt 2>&1; tail -1 $W/tests.txt; grep FAILED $W/tests.txt | head; pack
timeout 150 python benchmarks/exp_attention_window.py $W --seqs 16384 2>&1 | grep -v Warn > $W/exp.txt
python -c "import json; r = json.load(open('$W/exp-attention-window.json'))['rows']
[print(x['config'], round(x['us'], 1), '%.1e' % x['rel_err']) for x in sorted(r, key=lambda x: x.get('us', 1e9))[:12]]"
tail -2 $W/exp.txt; pack
