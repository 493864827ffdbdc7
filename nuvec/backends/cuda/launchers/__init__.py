"""One launcher per fused operation: grid, block, shared memory and arguments of its CUDA
kernels, written against a `nuvec.backends.cuda.runner.Runner`."""
