"""Nsight Compute runner and parser, and the compiled kernel's own resource report."""
