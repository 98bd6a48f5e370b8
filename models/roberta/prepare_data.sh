#!/usr/bin/env bash
# Once, on one host: raw text (gs:// folder or a folder on the shared PD) → optional GPT-2 BPE →
# fairseq-preprocess --only-source → data-bin on Filestore. Idempotent: skipped when the data-bin
# carries a stamp for the same input (file contents, or for gs:// the objects' size, date and
# name) and the same BPE setting; a rebuild replaces the old data-bin only once it is complete.
# usage: prepare_data.sh --source DIR|gs://B/DIR --dest DATA_BIN [--train-file train.txt]
#          [--valid-file valid.txt] [--bpe gpt2|none] [--conda-env ENV] [--python PY] [--workers N]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$here/lib.sh"

source_dir="" dest="" train="train.txt" valid="valid.txt" bpe="gpt2" conda_env="" python="" workers="$(nproc)"
while [[ $# -gt 0 ]]; do
  case $1 in
    --source) source_dir=${2%/}; shift 2 ;;
    --dest) dest=${2%/}; shift 2 ;;
    --train-file) train=$2; shift 2 ;;
    --valid-file) valid=$2; shift 2 ;;
    --bpe) bpe=$2; shift 2 ;;
    --conda-env) conda_env=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) die "prepare_data.sh: unknown option $1" ;;
  esac
done
[[ -n $source_dir && -n $dest ]] || die "usage: prepare_data.sh --source DIR|gs://... --dest DATA_BIN [...]"
if [[ -n $python ]]; then
  py=$python
elif [[ -n $conda_env ]]; then
  py="$(use_python node "$conda_env")"
else
  py="$(use_python vm)"
fi
core=("$py" "$here/prepare_data.py" --dest "$dest" --train-file "$train" --valid-file "$valid"
  --bpe "$bpe" --workers "$workers")

if [[ $source_dir == gs://* ]]; then
  listing="$(gcloud storage ls --long "$source_dir/$train" "$source_dir/$valid")" \
    || die "cannot list $source_dir/$train and $source_dir/$valid; check ROBERTA_DATA_SOURCE and the hosts' access"
  if "${core[@]}" --fingerprint "$listing" --check; then exit 0; fi
  download="$dest.download"
  mkdir -p "$download"
  log "downloading $source_dir/{$train,$valid}"
  gcloud storage cp "$source_dir/$train" "$source_dir/$valid" "$download/"
  "${core[@]}" --fingerprint "$listing" --src-dir "$download"
  rm -rf "$download"
else
  [[ -d $source_dir ]] || die "$source_dir is not a folder; check ROBERTA_DATA_SOURCE (is the shared PD attached?)"
  "${core[@]}" --src-dir "$source_dir"
fi
