"""The reference executor, float and fixed point."""

from .executor import GoldenModel, flatten_inputs

__all__ = ["GoldenModel", "flatten_inputs"]
