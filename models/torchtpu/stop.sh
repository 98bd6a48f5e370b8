#!/usr/bin/env bash
# Per host: stop the TorchTPU training (train.sh and its torchrun) and wait until it is gone.
set -euo pipefail
pattern='torchtpu/train[.]sh|torch[.]distributed[.]run'
pkill -TERM -f "$pattern" 2>/dev/null || true
for _ in $(seq 1 20); do
  pgrep -f "$pattern" >/dev/null || { echo "tpubuild: torchtpu stopped on $(hostname)"; exit 0; }
  sleep 1
done
pkill -KILL -f "$pattern" 2>/dev/null || true
echo "tpubuild: torchtpu killed on $(hostname)"
