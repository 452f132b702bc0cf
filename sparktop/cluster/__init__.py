"""Several Sparks side by side: node states read from a Prometheus server or from the exporters directly."""
