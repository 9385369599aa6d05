# Session 81, call c (~1.5 min): the RoPE, integration and decode-attention GPU tests after item 564's kernel change.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests; timeout 280 python -m pytest -q -p no:cacheprovider -n 12 tests/test_rope.py tests/test_integrations.py tests/test_decode_attention.py 2>&1 | tail -3
