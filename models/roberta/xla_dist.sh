#!/usr/bin/env bash
# node, on the leader: run xla_dist (which runs train.sh on every MIG worker) from the image's
# conda env, its own output appended to <log-dir>/xla_dist.log.
# usage: xla_dist.sh --conda-env ENV --log-dir DIR -- python -m torch_xla.distributed.xla_dist ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$here/lib.sh"

conda_env="" log_dir=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --conda-env) conda_env=$2; shift 2 ;;
    --log-dir) log_dir=$2; shift 2 ;;
    --) shift; break ;;
    *) die "xla_dist.sh: unknown option $1" ;;
  esac
done
[[ -n $conda_env && -n $log_dir && $# -gt 0 ]] || die "usage: xla_dist.sh --conda-env ENV --log-dir DIR -- COMMAND..."
host_env node
use_python node "$conda_env" >/dev/null
mkdir -p "$log_dir"
log "starting: $*" 2>>"$log_dir/xla_dist.log"
exec "$@" >>"$log_dir/xla_dist.log" 2>&1
