"""A toy data-parallel trainer whose outputs go to PyTorch and CuPy."""
