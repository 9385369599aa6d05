# session 37, call a: session 36's call d as it was prepared (rms_norm GPU tests of item 231; item 232's experiments).
bash benchmarks/results/logs/h200-2026-12-03-s36/run-d.sh
