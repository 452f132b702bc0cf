"""How much slower a workload runs while another keeps the GPU busy beside it: the measured ratios the
contention verdict (plan/verdict.py) predicts with and the slowdown rule (analysis/slowdown.py) compares a
measured figure against."""

from __future__ import annotations

# How much slower a victim runs while one other workload is busy beside it: two CUDA processes time-slice the
# GPU (no MPS). Measured on an H100 (shared/reference/measured-h100.md, section 2); the ratios carry over.
# Beside compute-bound work (a training step's GEMMs): a bandwidth-bound decoder 2.35x, an interactive burst
# 2.0x.
BESIDE_COMPUTE = {True: 2.35, False: 2.0}  # keyed by "the victim is a big decoder"
# Beside another decoder: two bandwidth-bound decoders 2.2x each (time slices, 91 % combined efficiency); an
# interactive burst beside a decoder 1.9x.
BESIDE_DECODER_BOTH_HEAVY = 2.2
BESIDE_DECODER = 1.9
