"""CUDA C kernels without a CUDA dependency at import: the NVRTC loader (`loader`), the CPU
kernel emulator (`emulator`), the runners that launch a kernel on either (`runner`) and one
launcher per fused operation (`launchers`). See docs/dev/adding_a_kernel.md."""
