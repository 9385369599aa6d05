# session 30, call c: decode_attention with splits past a sequence's keys idle and merged over the rest: GPU tests
# (not slow) and test_profile; the family's session run (results file: contiguous, paged, B = 1, the static-cache
# table); the default setting over 16 / 128 / 256-key pages (item 194's paged changes)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
FILES="tests/test_decode_attention.py tests/test_profile.py" bash benchmarks/gpu_tests.sh "not slow" 150
timeout 200 python benchmarks/gpu_session.py $OUT/results --families decode_attention > $OUT/session.log 2>&1
echo "rc $?"; grep -v "Warn\|warn\|return F\|^ *$" $OUT/session.log | grep -A40 "copy .* GB/s; rooftop" | cut -c1-180
python -c "import json, glob; d = json.load(open(glob.glob('$OUT/results/*decode_attention.json')[0]))
for r in list(d['tables'].values())[0]: print(r['shape'][2], round(r['rooftop_us'], 2), round(r['sdpa_masked_us'], 2))"
timeout 150 python benchmarks/exp_decode_attention.py $OUT --default-only > $OUT/exp-decode-attention.log 2>&1
echo "exp rc $?"; grep -v "Warn\|warn\|return F\|^ *$" $OUT/exp-decode-attention.log | tail -18 | cut -c1-200
