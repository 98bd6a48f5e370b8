#!/usr/bin/env bash
# Per host: stop the RoBERTa training and free the TPU. Safe to run when nothing is running.
#   --leader (node): first interrupt xla_dist, which stops the script on every worker.
#   vm: then kill whatever still holds the TPU (/dev/accel*, /dev/vfio/*) and drop libtpu's lock;
#   a TPU VM pod stays unusable while any host keeps a process on it.
# usage: stop.sh --arch node|vm|local [--leader]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$here/lib.sh"

arch="" leader=false
while [[ $# -gt 0 ]]; do
  case $1 in
    --arch) arch=$2; shift 2 ;;
    --leader) leader=true; shift ;;
    *) die "stop.sh: unknown option $1" ;;
  esac
done
case $arch in node | vm | local) ;; *) die "usage: stop.sh --arch node|vm|local [--leader]" ;; esac
host_env "$arch" --any # TPUBUILD_* when present; a host still booting can be stopped too

# wait_gone PATTERN SECONDS: true once no process matches.
wait_gone() {
  local i
  for ((i = 0; i < $2; i++)); do
    pgrep -f "$1" >/dev/null || return 0
    sleep 1
  done
  ! pgrep -f "$1" >/dev/null
}

if $leader; then
  dist='torch_xla[.]distributed[.]xla_dist'
  if pgrep -f "$dist" >/dev/null; then
    log "interrupting xla_dist (it cleans up its workers)"
    pkill -INT -f "$dist" || true
    wait_gone "$dist" 60 || { log "xla_dist still running; killing it"; pkill -KILL -f "$dist" || true; }
  fi
fi

# the same pattern as launcher.py TRAINING (what tpubuild stop --probe looks for)
train='fairseq_cli[.]train|roberta/train[.]sh'
if pgrep -f "$train" >/dev/null; then
  log "stopping fairseq-train"
  pkill -TERM -f "$train" || true
  wait_gone "$train" 20 || { log "still running; killing"; pkill -KILL -f "$train" || true; }
else
  log "no training running"
fi

if [[ $arch == vm ]]; then
  shopt -s nullglob
  devices=(/dev/accel* /dev/vfio/*)
  if ((${#devices[@]})); then
    pids="$(sudo lsof -t "${devices[@]}" 2>/dev/null | sort -u || true)"
    if [[ -n $pids ]]; then
      log "freeing the TPU: killing $(echo "$pids" | tr '\n' ' ')"
      echo "$pids" | xargs -r sudo kill -9
    fi
  fi
  sudo rm -f /tmp/libtpu_lockfile
fi
log "stopped"
