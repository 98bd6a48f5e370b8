#!/usr/bin/env bash
# Per host: make the pinned fairseq importable by the Python that trains. Idempotent: a stamp in
# ~/.tpubuild/stamps records what was installed, and a rerun with the same pins does nothing.
#   vm:   pip --user: torch and torchaudio (from --torch-index: PyTorch's CPU wheels, not PyPI's
#         CUDA build) and torch_xla[tpu] (libtpu from PyPI) of one release (launcher.VM_TORCH_XLA
#         maps the TPU runtime to it), then fairseq compiled against that torch.
#         --wheelhouse DIR (on Filestore): the first host to take DIR/<key>.lock downloads every
#         wheel and builds fairseq once into DIR/<key>; the others wait on the lock, then every
#         host installs from there with --no-index (no download, no compiler).
#   node: into the image's conda env (torch-xla-<release>), whose torch/torch_xla are kept as they are.
#   fairseq auto: fairseq==0.12.2 on Python < 3.11 (it does not run on 3.11),
#         fairseq-fixed==0.12.3.1 on 3.11+ (the launcher passes fairseq-fixed==0.12.3.1 on vm).
#         torch is pinned to the installed one while fairseq installs.
# usage: install.sh --arch node|vm|local [--conda-env ENV] [--torch-xla VER] [--torch-index URL]
#                   [--wheelhouse DIR] [--fairseq auto|PIP_REQ]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$here/lib.sh"

arch="" conda_env="" torch_xla="" fairseq="auto" torch_index="" wheelhouse=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --arch) arch=$2; shift 2 ;;
    --conda-env) conda_env=$2; shift 2 ;;
    --torch-xla) torch_xla=$2; shift 2 ;;
    --fairseq) fairseq=$2; shift 2 ;;
    --torch-index) torch_index=$2; shift 2 ;;
    --wheelhouse) wheelhouse=$2; shift 2 ;;
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
key="$(printf '%s|%s|%s|%s|%s|%s' "$arch" "$conda_env" "$torch_xla" "$fairseq" "$torch_index" "$(command -v "$py")" | sha256sum | cut -c1-16)"
stamp="$stamp_dir/install-$key"
if [[ -f $stamp ]] && "$py" -c 'import fairseq_cli.train' 2>/dev/null; then
  log "already installed: $fairseq ($(cat "$stamp"))"
  exit 0
fi

# pip into the environment when it is writable, else into the user site (which it also reads).
pip=("$py" -m pip install --quiet --disable-pip-version-check)
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if [[ $arch == vm || ! -w $site ]]; then pip+=(--user); fi

# install_from_wheelhouse: (vm with --wheelhouse) the torch stack and fairseq from
# $wheelhouse/<key>, filling it first when this host is the first (flock on Filestore).
install_from_wheelhouse() {
  local pyver tag dir
  pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  tag="$(printf 'py%s-torch%s-%s' "$pyver" "$torch_xla" "$fairseq" | tr -c 'A-Za-z0-9._=-' '_')"
  dir="$wheelhouse/$tag"
  mkdir -p "$wheelhouse"
  exec 9>"$dir.lock"
  log "waiting for $dir.lock (one host fills the wheelhouse, the others wait)"
  flock 9
  if [[ ! -f $dir/.complete ]]; then
    log "filling $dir: ${stack[*]} $fairseq"
    rm -rf "$dir.partial" && mkdir -p "$dir.partial"
    "$py" -m pip download --quiet --disable-pip-version-check -d "$dir.partial" "${index[@]}" \
      "${stack[@]}" cython numpy setuptools wheel
    "${pip[@]}" --no-index --find-links "$dir.partial" "${stack[@]}" cython numpy setuptools wheel
    printf '%s\n' "torch==$torch_xla" "torchaudio==$torch_xla" >"$dir.partial/constraints.txt"
    # fairseq compiled once against this torch; its dependencies as wheels beside it
    "$py" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation -w "$dir.partial" \
      -c "$dir.partial/constraints.txt" "${index[@]}" --find-links "$dir.partial" "$fairseq"
    touch "$dir.partial/.complete"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
  fi
  flock -u 9
  log "installing from $dir"
  "${pip[@]}" --no-index --find-links "$dir" -c "$dir/constraints.txt" "${stack[@]}" "$fairseq"
  "$py" -c 'import fairseq_cli.train' || die "$fairseq installed but fairseq_cli.train does not import"
  mkdir -p "$stamp_dir"
  echo "$fairseq torch==$torch_xla wheelhouse $dir $(date -u +%FT%TZ)" >"$stamp"
  log "installed $fairseq from the wheelhouse"
}

if [[ -n $torch_xla ]]; then
  # torch's own index first (torch, torchaudio: +cpu builds), PyPI for everything else.
  index=()
  if [[ -n $torch_index ]]; then index=(--index-url "$torch_index" --extra-index-url https://pypi.org/simple); fi
  stack=("torch==$torch_xla" "torch_xla[tpu]==$torch_xla" "torchaudio==$torch_xla")
  if [[ -n $wheelhouse ]]; then
    install_from_wheelhouse
    exit 0
  fi
  log "installing ${stack[*]}"
  "${pip[@]}" "${index[@]}" "${stack[@]}"
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
