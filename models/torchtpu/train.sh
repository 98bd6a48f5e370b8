#!/usr/bin/env bash
# Per host: run the user's script under torchrun with the environment the launcher computed
# (models/torchtpu/launch.py host_env: NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, ...), in the
# folder the script was shipped to, teeing everything to host-<NODE_RANK>.log on Filestore and
# copying the lines with the step word (tpubuild-step) to syslog for the dashboard's step rate.
# The script may start TorchTPU's profiler server (tpu_observe.serve(): this folder is on
# PYTHONPATH, the port in TPUBUILD_PROFILER_PORT) for `tpubuild profile`.
# usage: train.sh --log-dir DIR --env ENV --workdir DIR --nproc-per-node N [--profiler-port P] [--model NAME] -- SCRIPT [ARGS...]
set -euo pipefail
log_dir="" env="" workdir="." nproc=1 profiler_port="" model=torchtpu
while [[ $# -gt 0 ]]; do
  case $1 in
    --log-dir) log_dir=$2; shift 2 ;;
    --env) env=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --nproc-per-node) nproc=$2; shift 2 ;;
    --profiler-port) profiler_port=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "train.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ $# -eq 0 || -z $log_dir ]]; then echo "train.sh: needs --log-dir DIR -- SCRIPT [ARGS]" >&2; exit 2; fi
if [[ ! $model =~ ^[a-z][a-z0-9_]*$ ]]; then echo "train.sh: --model $model is not a model folder name" >&2; exit 2; fi
: "${NNODES:?train.sh: NNODES is not set}" "${NODE_RANK:?}" "${MASTER_ADDR:?}" "${MASTER_PORT:?}"
if [[ -r /etc/profile.d/tpubuild.sh ]]; then
  # shellcheck source=/dev/null
  . /etc/profile.d/tpubuild.sh
fi
export PATH="$HOME/.local/bin:$PATH"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
if [[ -n $profiler_port ]]; then export TPUBUILD_PROFILER_PORT="$profiler_port"; fi
python="${TPUBUILD_PYTHON:-$HOME/.tpubuild/venv-torchtpu/bin/python}"  # install.sh's venv
mkdir -p "$log_dir"
log="$log_dir/host-${NODE_RANK}.log"
# send_steps: the lines with the step word to syslog, tagged tpubuild-train and prefixed
# [tpubuild_env=ENV] (env_setup/scripts/startup.sh ships them to Cloud Logging); never fails.
send_steps() {
  local line
  if ! command -v logger >/dev/null 2>&1; then cat >/dev/null; return 0; fi
  while IFS= read -r line; do
    if [[ $line == *tpubuild-step* ]]; then
      logger -t tpubuild-train -- "[tpubuild_env=${env}] ${line}" 2>/dev/null || true
    fi
  done
  return 0
}
# Checkpoints that outlive the zone (docs/recovery.md, "Checkpoints in the bucket"): the script
# saves its checkpoint folder at $TPUBUILD_CHECKPOINT_DIR (on Filestore), writes the step into
# tpubuild-position there last, then prints "tpubuild-checkpoint STEP" (from the rank that saves);
# node 0 then copies the folder to <workspace>/checkpoints/<model> in the state bucket
# (TPUBUILD_WORKSPACE from the host's profile; TPUBUILD_CHECKPOINT_BUCKET overrides it, "off" turns
# the copy off) with the shared models/checkpoint_sync.sh, and before torchrun starts every node
# takes the bucket's copy when its step is later than the folder's tpubuild-position.
checkpoint_dir=${TPUBUILD_CHECKPOINT_DIR:-}
if [[ -z $checkpoint_dir && -n ${TPUBUILD_MOUNT_POINT:-} && -n $env ]]; then
  checkpoint_dir="${TPUBUILD_MOUNT_POINT%/}/nfs_share/checkpoints/$env/$model/checkpoint"
fi
export TPUBUILD_CHECKPOINT_DIR="$checkpoint_dir"
sync_script="$(dirname "$here")/checkpoint_sync.sh"
bucket=${TPUBUILD_CHECKPOINT_BUCKET:-${TPUBUILD_WORKSPACE:+${TPUBUILD_WORKSPACE%/}/checkpoints/$model}}
if [[ $bucket == off || -z $checkpoint_dir || ! -r $sync_script ]]; then bucket=""; fi
if [[ -n $bucket ]]; then
  position="$(cat "$checkpoint_dir/tpubuild-position" 2>/dev/null || true)"
  [[ $position =~ ^[0-9]+$ ]] || position=-1
  bash "$sync_script" pull --dest "$bucket" --dir "$(dirname "$checkpoint_dir")" --local "$position" 2>>"$log" ||
    echo "[tpubuild torchtpu] warning: the bucket's checkpoint could not be read; resuming from Filestore's" >>"$log"
fi
# the output's other readers: the dashboard's step lines, and on node 0 the checkpoint copy
readers() {
  if [[ -n $bucket && $NODE_RANK == 0 ]]; then
    tee >(send_steps) | bash "$sync_script" watch --dest "$bucket" --dir "$checkpoint_dir"
  else
    send_steps
  fi
}
cd "$workdir"
echo "[tpubuild torchtpu $(date -u +%FT%TZ) $(hostname)] NODE_RANK=$NODE_RANK NNODES=$NNODES MASTER_ADDR=$MASTER_ADDR $*" >>"$log"
"$python" -m torch.distributed.run --nnodes "$NNODES" --node-rank "$NODE_RANK" --nproc-per-node "$nproc" \
  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" "$@" 2>&1 | tee -a "$log" | readers
exit "${PIPESTATUS[0]}"
