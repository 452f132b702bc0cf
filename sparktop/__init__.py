"""sparktop: the terminal dashboard for the NVIDIA DGX Spark (GB10)."""

__version__ = "0.1.0"
