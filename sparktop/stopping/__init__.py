"""Stopping containers and signalling processes, without Textual: the stop book and its log."""
