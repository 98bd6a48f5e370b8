# shellcheck shell=bash
# Helpers sourced by the RoBERTa scripts (install.sh, prepare_data.sh, train.sh, stop.sh, xla_dist.sh).

log() { printf '[roberta %s %s] %s\n' "$(date -u +%H:%M:%S)" "$(hostname)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# activate_conda NAME: the node images (family torch-xla) ship conda with one env per release,
# e.g. torch-xla-1.13 for the pytorch-1.13 runtime.
activate_conda() {
  local name=$1 base
  for base in "${CONDA_ROOT:-}" /anaconda3 /opt/conda "$HOME/anaconda3" "$HOME/miniconda3"; do
    if [[ -n $base && -f $base/etc/profile.d/conda.sh ]]; then
      # shellcheck source=/dev/null
      source "$base/etc/profile.d/conda.sh"
      set +u # conda's activation scripts read unset variables
      conda activate "$name" || die "conda env $name does not exist on $(hostname); the runtime's image must provide it"
      set -u
      return 0
    fi
  done
  die "no conda installation on $(hostname) (looked in /anaconda3, /opt/conda, ~/anaconda3); set CONDA_ROOT"
}

# host_preempted ARCH: true when the metadata server says this TPU VM or Compute Engine VM is
# preempted (instance/preempted is TRUE); never on node or local.
host_preempted() {
  [[ $1 == vm ]] || return 1
  [[ "$(curl -sf -m 5 -H 'Metadata-Flavor: Google' \
    "${TPUBUILD_METADATA_URL:-http://metadata.google.internal}/computeMetadata/v1/instance/preempted" || true)" == TRUE ]]
}

# use_python ARCH CONDA_ENV: put the training Python first on PATH and print its name.
use_python() {
  local arch=$1 env=${2:-}
  case $arch in
    node) activate_conda "$env"; echo python ;;
    vm) export PATH="$HOME/.local/bin:$PATH"; echo python3 ;;
    local) echo "${PYTHON:-python3}" ;;
    *) die "--arch must be node, vm or local, not '$arch'" ;;
  esac
}

# host_env ARCH [--any]: on a TPU host (node, vm) load the XLA environment that
# env_setup/scripts/startup.sh writes at every boot to /etc/profile.d/tpubuild.sh (PJRT_DEVICE,
# XRT_TPU_CONFIG, TPUBUILD_*). gcloud's `ssh --command` and xla_dist's ssh run non-login shells,
# which never read /etc/profile. Unless --any (stop.sh: it must work on any host), a host whose
# boot has not finished or failed (no /run/tpubuild/ready) stops here with one line saying why.
# local: nothing. TPUBUILD_PROFILE_D and TPUBUILD_RUN_DIR move both files (tests), as for startup.sh.
host_env() {
  local arch=$1 any=${2:-} run_dir=${TPUBUILD_RUN_DIR:-/run/tpubuild} profile why
  profile="${TPUBUILD_PROFILE_D:-/etc/profile.d}/tpubuild.sh"
  if [[ $arch == local ]]; then return 0; fi
  if [[ $any != --any && ! -e $run_dir/ready ]]; then
    why="startup.sh has not finished"
    if [[ -r $run_dir/failed ]]; then why="$(cat "$run_dir/failed")"; fi
    die "$(hostname) is not ready: $run_dir/ready is missing ($why); check its serial console (docs/env_setup.md, Logs and debugging)"
  fi
  if [[ -r $profile ]]; then
    # shellcheck source=/dev/null
    source "$profile"
  fi
  return 0
}

# send_train_steps ENV: copies stdin's fairseq `train_inner` progress lines to syslog, tagged
# tpubuild-train and prefixed "[tpubuild_env=ENV] " (env_setup/scripts/startup.sh has rsyslog
# and the Ops Agent ship them to the Cloud Logging log tpubuild-train, which the dashboard's
# log-based step metric counts: builder/inputs/dashboard.py step_log_filter). Reads stdin to its end
# and never fails: a host without logger (or syslog) only loses the dashboard's step-rate tile.
send_train_steps() {
  local env=$1 line
  if ! command -v logger >/dev/null 2>&1; then
    cat >/dev/null
    return 0
  fi
  while IFS= read -r line; do
    if [[ $line == *train_inner* ]]; then
      logger -t tpubuild-train -- "[tpubuild_env=${env}] ${line}" 2>/dev/null || true
    fi
  done
  return 0
}
