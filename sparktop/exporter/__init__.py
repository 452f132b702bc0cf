"""`sparktop serve`: the session's latest state as Prometheus metrics and JSON over HTTP (read-only)."""
