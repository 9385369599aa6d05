"""Profiling: why a kernel is as fast as it is.

ncu        Nsight Compute runner and parser (one cold call of an op, --clock-control none)
kernels    the Triton kernels an op launches and their compiled resources (on a GPU, or compiled
           offline for sm_90 without one)
occupancy  blocks per SM from registers, shared memory and warps, and what limits them
diagnose   a reading (ncu's or the compiled kernel's) turned into a diagnosis in plain words
op         `rooftop profile <op>`: all of the above for one op and shape
model      `rooftop profile --model`: a model's top kernels by time, with % of roofline where known
"""
