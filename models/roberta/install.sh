#!/usr/bin/env bash
# Per host: make the pinned fairseq importable by the Python that trains. Idempotent: a stamp in
# ~/.tpubuild/stamps records what was installed, and a rerun with the same pins does nothing.
#   vm:   pip --user: torch and torch_xla[tpu] of one release (launcher.VM_TORCH_XLA maps the TPU
#         runtime to it), then fairseq.
#   node: into the image's conda env (torch-xla-<release>), whose torch/torch_xla are kept as they are.
#   fairseq auto: fairseq==0.12.2 on Python < 3.11 (it does not run on 3.11),
#         fairseq-fixed==0.12.3.1 on 3.11+. torch is pinned to the installed one while fairseq installs.
# usage: install.sh --arch node|vm|local [--conda-env ENV] [--torch-xla VER] [--fairseq auto|PIP_REQ]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$here/lib.sh"

arch="" conda_env="" torch_xla="" fairseq="auto"
while [[ $# -gt 0 ]]; do
  case $1 in
    --arch) arch=$2; shift 2 ;;
    --conda-env) conda_env=$2; shift 2 ;;
    --torch-xla) torch_xla=$2; shift 2 ;;
    --fairseq) fairseq=$2; shift 2 ;;
    *) die "install.sh: unknown option $1" ;;
  esac
done
py="$(use_python "$arch" "$conda_env")"
if [[ $arch == vm && -z $torch_xla ]]; then die "vm needs --torch-xla VERSION (see docs/models.md)"; fi

if [[ $fairseq == auto ]]; then
  if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    fairseq="fairseq-fixed==0.12.3.1"
  else
    fairseq="fairseq==0.12.2"
  fi
fi

stamp_dir="$HOME/.tpubuild/stamps"
key="$(printf '%s|%s|%s|%s|%s' "$arch" "$conda_env" "$torch_xla" "$fairseq" "$(command -v "$py")" | sha256sum | cut -c1-16)"
stamp="$stamp_dir/install-$key"
if [[ -f $stamp ]] && "$py" -c 'import fairseq_cli.train' 2>/dev/null; then
  log "already installed: $fairseq ($(cat "$stamp"))"
  exit 0
fi

# pip into the environment when it is writable, else into the user site (which it also reads).
pip=("$py" -m pip install --quiet --disable-pip-version-check)
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if [[ $arch == vm || ! -w $site ]]; then pip+=(--user); fi

if [[ $arch == vm ]]; then
  log "installing torch==$torch_xla and torch_xla[tpu]==$torch_xla"
  "${pip[@]}" "torch==$torch_xla" "torch_xla[tpu]==$torch_xla" \
    -f https://storage.googleapis.com/libtpu-releases/index.html \
    -f https://storage.googleapis.com/libtpu-wheels/index.html
fi

constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
torch_version="$("$py" -c 'import importlib.metadata as m; print(m.version("torch"))')" \
  || die "torch is not installed in $py; on node use the image's conda env, on vm pass --torch-xla"
echo "torch==$torch_version" >"$constraints"
if [[ $fairseq == fairseq==0.12.2 ]]; then
  # 0.12.2 pins omegaconf 2.0.x, whose metadata pip >= 24.1 rejects, and uses np.float (numpy < 1.24).
  "${pip[@]}" "pip<24.1"
  echo "numpy<1.24" >>"$constraints"
fi
log "installing $fairseq (torch stays $torch_version)"
"${pip[@]}" -c "$constraints" cython numpy setuptools wheel
"${pip[@]}" -c "$constraints" --no-build-isolation "$fairseq"
"$py" -c 'import fairseq_cli.train' || die "$fairseq installed but fairseq_cli.train does not import"
mkdir -p "$stamp_dir"
echo "$fairseq torch==$torch_version $(date -u +%FT%TZ)" >"$stamp"
log "installed $fairseq"
