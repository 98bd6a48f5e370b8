#!/usr/bin/env bash
# Per host: run the user's script under torchrun with the environment the launcher computed
# (models/torchtpu/launch.py host_env: NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, ...), in the
# folder the script was shipped to, teeing everything to host-<NODE_RANK>.log on Filestore and
# copying the lines with the step word (tpubuild-step) to syslog for the dashboard's step rate.
# The script may start TorchTPU's profiler server (tpu_observe.serve(): this folder is on
# PYTHONPATH, the port in TPUBUILD_PROFILER_PORT) for `tpubuild profile`.
# usage: train.sh --log-dir DIR --env ENV --workdir DIR --nproc-per-node N [--profiler-port P] -- SCRIPT [ARGS...]
set -euo pipefail
log_dir="" env="" workdir="." nproc=1 profiler_port=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --log-dir) log_dir=$2; shift 2 ;;
    --env) env=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --nproc-per-node) nproc=$2; shift 2 ;;
    --profiler-port) profiler_port=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "train.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ $# -eq 0 || -z $log_dir ]]; then echo "train.sh: needs --log-dir DIR -- SCRIPT [ARGS]" >&2; exit 2; fi
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
cd "$workdir"
echo "[tpubuild torchtpu $(date -u +%FT%TZ) $(hostname)] NODE_RANK=$NODE_RANK NNODES=$NNODES MASTER_ADDR=$MASTER_ADDR $*" >>"$log"
"$python" -m torch.distributed.run --nnodes "$NNODES" --node-rank "$NODE_RANK" --nproc-per-node "$nproc" \
  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" "$@" 2>&1 | tee -a "$log" | send_steps
exit "${PIPESTATUS[0]}"
