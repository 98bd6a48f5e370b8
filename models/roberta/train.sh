#!/usr/bin/env bash
# Per host: run fairseq-train with the launcher's arguments through pjrt_compat.py (fairseq 0.12
# under PJRT: spawn, ordinals, memory statistics, resume position; a no-op without PJRT, e.g.
# node's XRT images or --cpu), everything the host prints teed to
# <log-dir>/host-<N>.log on Filestore (N: TPU worker number on vm, xla_dist's ordinal on node).
# usage: train.sh --log-dir DIR --arch node|vm|local [--conda-env ENV] -- FAIRSEQ_ARGS...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$here/lib.sh"

log_dir="" arch="" conda_env=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --log-dir) log_dir=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --conda-env) conda_env=$2; shift 2 ;;
    --) shift; break ;;
    *) die "train.sh: unknown option $1" ;;
  esac
done
[[ -n $log_dir && -n $arch ]] || die "usage: train.sh --log-dir DIR --arch node|vm|local [--conda-env ENV] -- FAIRSEQ_ARGS..."
# The host's XLA environment (a non-login shell never reads /etc/profile); under xla_dist its own
# XRT_* variables win (the profile leaves XRT_TPU_CONFIG alone when XRT_LOCAL_WORKER is set).
host_env "$arch"
if [[ $arch == vm ]]; then export PJRT_DEVICE="${PJRT_DEVICE:-TPU}"; fi
py="$(use_python "$arch" "$conda_env")"

host_id=""
case $arch in
  node) host_id=${XRT_SHARD_ORDINAL:-} ;;
  vm) host_id=${TPUBUILD_WORKER_NUMBER:-$(curl -sf -m 5 -H 'Metadata-Flavor: Google' \
        http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number || true)} ;;
  local) host_id=${TPUBUILD_HOST_ID:-0} ;;
esac
host_id=${host_id:-$(hostname)}

mkdir -p "$log_dir"
# Checkpoints that outlive the zone (docs/recovery.md, "Checkpoints in the bucket"): the shared
# models/checkpoint_sync.sh (the launch copies it beside this folder) copies each checkpoint
# fairseq saves to <workspace>/checkpoints/roberta in the state bucket (TPUBUILD_WORKSPACE, from
# the host's profile; TPUBUILD_CHECKPOINT_BUCKET overrides it, "off" turns the copy off), from
# host 0, which is the host that saves; and before fairseq starts, every host takes the bucket's
# copy when it is newer than Filestore's checkpoint_last.pt (by update number).
save_dir="" prev=""
for arg in "$@"; do
  if [[ $prev == --save-dir ]]; then save_dir=$arg; fi
  prev=$arg
done
sync_script="$(dirname "$here")/checkpoint_sync.sh"
bucket=${TPUBUILD_CHECKPOINT_BUCKET:-${TPUBUILD_WORKSPACE:+${TPUBUILD_WORKSPACE%/}/checkpoints/roberta}}
if [[ $bucket == off || -z $save_dir || ! -r $sync_script ]]; then bucket=""; fi
# fairseq's train_inner progress lines also go to syslog for the dashboard's step-rate tile
# (lib.sh send_train_steps; TPUBUILD_ENV comes from the host's profile, host_env above)
steps() { if [[ -n ${TPUBUILD_ENV:-} ]]; then send_train_steps "$TPUBUILD_ENV"; else cat >/dev/null; fi; }
watcher() {
  if [[ -n $bucket && $host_id == 0 ]]; then
    tee >(steps) | bash "$sync_script" watch --dest "$bucket" --dir "$save_dir"
  else
    steps
  fi
}
exec > >(tee -a "$log_dir/host-$host_id.log" >(watcher)) 2>&1
log "host $host_id starts fairseq-train $*"
if [[ -n $bucket ]]; then
  local_position="$("$py" "$here/checkpoint_position.py" "$save_dir/checkpoint_last.pt" || echo -1)"
  bash "$sync_script" pull --dest "$bucket" --dir "$save_dir" --local "$local_position" ||
    log "warning: the bucket's checkpoint could not be read; resuming from Filestore's ($save_dir)"
else
  log "checkpoints stay on Filestore only (no bucket: TPUBUILD_WORKSPACE unset, or TPUBUILD_CHECKPOINT_BUCKET=off)"
fi
export TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="${TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD:-1}"
# torch_xla's profiler server (TPUBUILD_PROFILER_PORT) and metrics report, beside the log
# (models/xla_observe.py; `tpubuild profile`, `tpubuild logs --metrics`), around pjrt_compat.py
# (fairseq under PJRT), which then runs fairseq_cli.train
export TPUBUILD_METRICS_REPORT="${TPUBUILD_METRICS_REPORT:-$log_dir/host-$host_id.metrics.txt}"
# (only where torch_xla is installed: find_spec does not import it; --cpu runs have none)
run=("$py" "$here/pjrt_compat.py" "$@")
if [[ -r $here/xla_observe.py ]] &&
  "$py" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch_xla") is None)' 2>/dev/null; then
  run=("$py" "$here/xla_observe.py" "$here/pjrt_compat.py" "$@")
fi
# A run that dies on this host (not a preemption, not `tpubuild stop`) is started again from
# checkpoint_last.pt (the launcher's --restore-file) at most TPUBUILD_TRAIN_RESTARTS times
# (default 3), each time saying why. The other hosts' runs fail with it (their collectives lose a
# peer) and restart the same way, so the whole slice resumes from the same checkpoint. A
# preempted host is left to the health check (TPU_RECOVERY, docs/recovery.md).
restarts=${TPUBUILD_TRAIN_RESTARTS:-3}
[[ $restarts =~ ^[0-9]+$ ]] || die "TPUBUILD_TRAIN_RESTARTS must be a whole number, not '$restarts'"
attempt=0
while true; do
  status=0
  "${run[@]}" || status=$?
  if ((status == 0)); then exit 0; fi
  if ((status == 130 || status == 143)); then
    log "fairseq-train was stopped (status $status); not restarted"
    exit "$status"
  fi
  if host_preempted "$arch"; then
    log "fairseq-train exited with status $status: this host is preempted; the health check recreates the slice"
    exit "$status"
  fi
  if ((attempt >= restarts)); then
    log "fairseq-train exited with status $status (not a preemption); gave up after $restarts restarts"
    exit "$status"
  fi
  attempt=$((attempt + 1))
  log "fairseq-train exited with status $status (not a preemption); restart $attempt of $restarts from checkpoint_last.pt"
  sleep "${TPUBUILD_TRAIN_RESTART_WAIT_S:-30}"
done
