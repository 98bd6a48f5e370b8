#!/usr/bin/env bash
# Per host: install torch (CPU build: a TPU needs no CUDA), torch-tpu and libtpu into the venv
# ~/.tpubuild/venv-torchtpu (train.sh trains with it), from the Filestore wheelhouse. torch-tpu needs
# Python 3.11+; the TPU VM images carry Ubuntu 22.04's 3.10, so the venv is made from the first
# python3.1x >= 3.11 on the host, else from Ubuntu's python3.11 (apt, installed here). The first host to take WHEELHOUSE/.lock downloads the
# wheels there; the others wait on the lock, then every host installs with --no-index. A stamp
# makes a rerun with the same pins a no-op.
# --no-deps REQ: also REQ, without its dependencies (XProf's capture client).
# usage: install.sh --wheelhouse DIR [--torch-index URL] [--no-deps REQ]... -- REQUIREMENT...
set -euo pipefail
wheelhouse="" index="" nodeps=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --wheelhouse) wheelhouse=$2; shift 2 ;;
    --torch-index) index=$2; shift 2 ;;
    --no-deps) nodeps+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ -z $wheelhouse || $# -eq 0 ]]; then echo "install.sh: needs --wheelhouse DIR -- REQUIREMENT..." >&2; exit 2; fi
if [[ -r /etc/profile.d/tpubuild.sh ]]; then
  # shellcheck source=/dev/null
  . /etc/profile.d/tpubuild.sh
fi
venv="$HOME/.tpubuild/venv-torchtpu"
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
if [[ -z ${TPUBUILD_PYTHON:-} && ! -x $venv/bin/python ]]; then
  base=""
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null && new_enough "$candidate"; then base=$candidate; break; fi
  done
  if [[ -z $base ]]; then
    echo "tpubuild: no Python 3.11+ on $(hostname); installing Ubuntu's python3.11"
    sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 python3.11-venv >/dev/null
    base=python3.11
  fi
  "$base" -m venv "$venv"
fi
py="${TPUBUILD_PYTHON:-$venv/bin/python}"
stamp="$HOME/.tpubuild/stamps/torchtpu-$(printf '%s ' "$@" "${nodeps[@]}" | sha256sum | cut -c1-16)"
if [[ -f $stamp ]] && TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$py" -c 'import torch, torch_tpu' 2>/dev/null; then
  echo "tpubuild: already installed: $*"
  exit 0
fi
mkdir -p "$wheelhouse" "$(dirname "$stamp")"
extra=()
if [[ -n $index ]]; then extra=(--extra-index-url "$index"); fi
(
  flock 9
  if [[ ! -f $wheelhouse/.complete ]]; then
    "$py" -m pip download --quiet --disable-pip-version-check -d "$wheelhouse" "${extra[@]}" "$@"
    if (( ${#nodeps[@]} )); then
      "$py" -m pip download --quiet --disable-pip-version-check -d "$wheelhouse" --no-deps "${nodeps[@]}"
    fi
    printf '%s\n' "$@" "${nodeps[@]}" >"$wheelhouse/.complete"
  fi
) 9>"$wheelhouse/.lock"
"$py" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$wheelhouse" "$@"
if (( ${#nodeps[@]} )); then
  "$py" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$wheelhouse" --no-deps "${nodeps[@]}"
fi
printf '%s\n' "$@" "${nodeps[@]}" >"$stamp"
echo "tpubuild: installed $*"
