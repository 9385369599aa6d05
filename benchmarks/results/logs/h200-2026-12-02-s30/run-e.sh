# session 30, call e: the model profiler's attribution after pairing only launches made straight from rooftop ops
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
timeout 100 python -m pytest tests/test_profile.py tests/test_cli.py -q -k "tiny or attribute" -p no:cacheprovider -rf \
    2>&1 | tail -3 | cut -c1-600
timeout 60 python -m rooftop profile --model tiny --batch 1 --seq 16 --steps 1 --top 14 2>&1 | grep -v Warn | cut -c1-160
