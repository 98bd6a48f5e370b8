#!/usr/bin/env bash
# Per host: install torch (CPU build: a TPU needs no CUDA), torch-tpu and libtpu for the Python
# that trains, from the Filestore wheelhouse. The first host to take WHEELHOUSE/.lock downloads the
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
py="${TPUBUILD_PYTHON:-python3}"
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
"$py" -m pip install --quiet --disable-pip-version-check --user --no-index --find-links "$wheelhouse" "$@"
if (( ${#nodeps[@]} )); then
  "$py" -m pip install --quiet --disable-pip-version-check --user --no-index --find-links "$wheelhouse" --no-deps \
    "${nodeps[@]}"
fi
printf '%s\n' "$@" >"$stamp"
echo "tpubuild: installed $*"
