# session 29, call a: decode_attention's GPU tests (slow included), then its launch parameters against SDPA
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
python -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)"
FILES=tests/test_decode_attention.py bash benchmarks/gpu_tests.sh "gpu or slow or not slow" 200
timeout 330 python benchmarks/exp_decode_attention.py $OUT > $OUT/exp-decode-attention.log 2>&1; echo "rc $?"
tail -25 $OUT/exp-decode-attention.log | cut -c1-200
