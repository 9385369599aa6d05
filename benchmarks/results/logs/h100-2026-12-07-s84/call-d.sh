# Session 84, call d (~3.5 min, any card; call c cut to what ~580 s of budget allows after four refusals): the bounds
# and heads-of-512 GPU tests, probe-d512.py, check_architectures.py --kv-fp8 in bf16 over item 584's new layouts and
# the fp8 rows in question. One tarball $OUT/d.tgz rewritten after each step.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/d; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/d.tgz -C /tmp d; }
timeout 90 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py \
  -k "gpu and (key_mask or sinks_and_softcap or 512)" 2>&1 | tail -15 > $W/tests.txt; tail -4 $W/tests.txt; pack
timeout 70 python benchmarks/results/logs/h100-2026-12-07-s83/probe-d512.py 2>&1 | grep -v Warn > $W/d512.txt
cat $W/d512.txt; pack
timeout 60 python benchmarks/check_architectures.py $W/arch --kv-fp8 --dtype bfloat16 \
  --arch GPTNeoX,Persimmon,GPTJ,OPT,Llama,Qwen3_5Text,Olmo2,Gemma3Text 2>&1 | grep "^|\|off by\|Error" > $W/arch.txt
cut -d'|' -f2,4-10 $W/arch.txt | cut -c1-150; pack
