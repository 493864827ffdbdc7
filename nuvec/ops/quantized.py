"""Quantization and gathered products: quantize, dequantize, quantized_matmul, gather_mm, gather_qmm, block_masked_mm, segmented_mm."""

from __future__ import annotations

__all__: list[str] = []
