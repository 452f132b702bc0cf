"""What this machine has measured: the footprint store (peaks) and the slowdown recorder."""
