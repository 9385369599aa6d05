# Session 81, call b: session 80's call c (logs/h100-2026-12-07-s80/call-c.sh) rerun as it is, at this session's code
# (the fp8 KV kernel of item 561, the fused RoPE + fp8 append of item 564).
bash benchmarks/results/logs/h100-2026-12-07-s80/call-c.sh
