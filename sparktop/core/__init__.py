"""The ground floor every layer stands on: the snapshot models, formatting, safe text, file and HTTP
primitives.

Imports nothing of sparktop above it."""
