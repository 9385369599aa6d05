# session 23, call 4 (the command given inline): pytest -k 'plan_reuse or mma_gemv or capture or every_candidate_gpu', timeout 150
