"""fpgagen: a compiler from sparse neural networks to FPGA accelerators."""

__version__ = "0.1.0"
