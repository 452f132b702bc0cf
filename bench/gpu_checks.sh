#!/bin/bash
# The checks a session runs when it is lent a machine with an NVIDIA GPU (one call; results under $OUT):
# the NVML collector and discrete-GPU attribution against the real driver, `sparktop --once --json`, the exporter's
# per-consumer GPU series, and training-memory rows for the planner's measured table (bench/measure_training.py).
# sparktop's own dependencies come as wheels in .whl (see the device notes); PyTorch is the machine's.
set -u
OUT=${OUT:-/tmp/gpu-checks}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
sp() { PYTHONPATH=/tmp/site:$PWD python3 -m sparktop "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv | tee "$OUT/smi.txt"
sp --once --json > "$OUT/once-idle.json" 2> "$OUT/once-idle.err"; echo "once idle rc=$?"
# A holder: 9 GB on the GPU and sustained GEMMs, its own process, for 45 s.
python3 -c '
import torch, time
hold = torch.empty(int(9e9), dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 45
while time.time() < end:
    a @ a; torch.cuda.synchronize()
' & HOLDER=$!
sleep 12
echo "holder pid $HOLDER"
sp --once --json > "$OUT/once-busy.json" 2> "$OUT/once-busy.err"; echo "once busy rc=$?"
sp --once > "$OUT/once-busy.txt" 2>&1
PYTHONPATH=/tmp/site:$PWD timeout 60 python3 scripts/nvml_probe.py --window 2 > "$OUT/probe.txt" 2>&1; echo "probe rc=$?"
sp serve --listen 127.0.0.1:9477 > "$OUT/serve.log" 2>&1 & SERVE=$!
sleep 6
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9477/metrics", timeout=10).read().decode())' > "$OUT/metrics.txt" 2>&1
kill $SERVE; wait $HOLDER
python3 - "$OUT/once-busy.json" "$HOLDER" <<'PY'
import json, sys
snap = json.load(open(sys.argv[1])); pid = int(sys.argv[2])
gpu = snap.get("gpu") or {}
print("gpu:", {k: v for k, v in gpu.items() if k != "gpus"})
for g in gpu.get("gpus") or []:
    print("  device:", g)
procs = [p for p in snap.get("processes", []) if p.get("pid") == pid]
print("holder row:", procs)
PY
grep -E '^sparktop_(gpu|consumer_gpu)' "$OUT/metrics.txt" | head -20
# Training rows: one process each.
while read -r args; do
  timeout 240 python3 bench/measure_training.py $args >> "$OUT/rows.jsonl" 2>> "$OUT/train.err" || echo "FAILED: $args" | tee -a "$OUT/train.err"
done <<'RUNS'
--arch llama-3.2-1b --method sft --batch 2 --seq 1024
--arch llama-3.2-1b --method sft --batch 8 --seq 1024
--arch llama-3.2-1b --method sft --batch 16 --seq 1024 --gc
--arch llama-3.2-1b --method lora --batch 8 --seq 1024
--arch qwen3-4b --method sft --batch 1 --seq 1024
--arch qwen3-4b --method sft --batch 4 --seq 1024
--arch qwen3-4b --method sft --batch 8 --seq 1024 --gc
--arch qwen3-4b --method lora --batch 4 --seq 1024
--arch qwen2.5-1.5b --method sft --batch 4 --seq 2048
RUNS
cut -c1-200 "$OUT/rows.jsonl"
tail -5 "$OUT/train.err"
