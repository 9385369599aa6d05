# For session 72's first call (~4 min; not yet run): the first half of the GPU suite (s54's run-a1.sh: test_plans,
# test_compile, test_matmul, test_quant_matmul, test_attention), last run whole in session 60 (item 408); since then
# attention, decode_attention, matmul, quant_matmul, _support and the harness changed beside moe / hf (whose tests
# ran on H100s each session). Then next2.sh within 30 s of this call's return.
bash benchmarks/results/logs/h200-2026-12-04-s54/run-a1.sh
