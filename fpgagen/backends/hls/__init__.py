"""The HLS back end: Vitis HLS C++ of the engine (docs/engine.md) and its C simulation."""

from .csim import CsimResult, Mismatch, run_csim
from .emit import emit_hls

__all__ = ["CsimResult", "Mismatch", "emit_hls", "run_csim"]
