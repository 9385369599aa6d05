# session 30, call a: GPU tests of session 29's last changes (key_mask, the patch_model decode path, shared
# attention checks, profile), the profiler probe (are Triton kernels in torch.profiler's events?), then end-to-end
# decode over a static cache of 4096 with decode_attention in the int4 model
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache /tmp/probe && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
FILES="tests/test_decode_attention.py tests/test_integrations.py tests/test_attention.py tests/test_cli.py tests/test_profile.py" \
    bash benchmarks/gpu_tests.sh "not slow" 240
timeout 60 python benchmarks/probe_profiler_triton.py /tmp/probe > $OUT/probe-profiler.txt 2>&1; echo "probe rc $?"
timeout 300 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --decode-attention --repeats 3 \
    > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -9 $OUT/e2e-graphs.log | cut -c1-170
