"""Saving and loading arrays: MLX's `save`, `savez`, `savez_compressed`, `save_safetensors`,
`save_gguf` and `load`, in NumPy's `.npy`/`.npz`, safetensors and GGUF files.

One module per format (`numpy_files`, `safetensors_files`, `gguf_files` with the quantized
GGUF types in `gguf_quants`); `files` holds what they share and `loading` the `load` entry
point. See docs/files.md.
"""

from nuvec.io.gguf_files import save_gguf
from nuvec.io.loading import load
from nuvec.io.numpy_files import save, savez, savez_compressed
from nuvec.io.safetensors_files import save_safetensors

__all__ = ["load", "save", "save_gguf", "save_safetensors", "savez", "savez_compressed"]
