"""The benchmark harness: providers, sweeps, timing, results (JSON/CSV) and plots."""
