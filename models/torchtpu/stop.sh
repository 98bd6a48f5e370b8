#!/usr/bin/env bash
# Per host: stop the TorchTPU training (train.sh and its torchrun) and wait until it is gone.
# --pattern REGEX --grace S: first SIGTERM only the processes matching REGEX (the training script:
# models/roberta_torchtpu's pretrain.py writes its checkpoint at the update boundary, then exits)
# and give them S seconds, before torchrun (whose own SIGTERM would kill them after 30 s) is stopped.
# usage: stop.sh [--pattern REGEX --grace SECONDS]
set -euo pipefail
pattern='torchtpu/train[.]sh|torch[.]distributed[.]run'
first="" grace=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --pattern) first=$2; shift 2 ;;
    --grace) grace=$2; shift 2 ;;
    *) echo "stop.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ -n $first ]]; then
  pkill -TERM -f "$first" 2>/dev/null || true
  for _ in $(seq 1 "$grace"); do
    pgrep -f "$first" >/dev/null || break
    sleep 1
  done
fi
pkill -TERM -f "$pattern" 2>/dev/null || true
for _ in $(seq 1 20); do
  pgrep -f "$pattern" >/dev/null || { echo "tpubuild: torchtpu stopped on $(hostname)"; exit 0; }
  sleep 1
done
pkill -KILL -f "$pattern" 2>/dev/null || true
echo "tpubuild: torchtpu killed on $(hostname)"
