"""cocotb testbenches, generic over a compiled design (they read its manifest and vectors)."""
