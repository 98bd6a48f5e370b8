#!/usr/bin/env bash
# Checkpoints that outlive the zone (docs/recovery.md, "Checkpoints in the bucket"), shared by the
# model plug-ins: the launch copies this file beside every plug-in's folder (~/.tpubuild/ on vm and
# mig), and a plug-in's train.sh runs it.
#
#   checkpoint_sync.sh push  --dest gs://B/P --position N SRC[=NAME]...
#       copy SRC (a file or a folder, stored as NAME, default its base name) to the bucket as one
#       generation: the files under gs://B/P/g-<N>-<time>/, then the manifest gs://B/P/manifest
#       (position, generation, names) written last, with a generation precondition, so a reader
#       sees the previous checkpoint or this one, never a half-written one; then the generations
#       the manifest does not name are deleted (all their versions). Nothing is copied when the
#       manifest already holds position N or later.
#   checkpoint_sync.sh pull  --dest gs://B/P --dir DIR --local N
#       when the manifest's position is later than N (the position of the checkpoint in DIR, -1:
#       none), download the generation it names into DIR (a temporary folder, then a rename of each
#       NAME); otherwise leave DIR as it is. Says which one it took.
#   checkpoint_sync.sh watch --dest gs://B/P --dir DIR
#       read a training's output on stdin; after each save line, push that checkpoint in the
#       background, one push at a time (a lock), never blocking the reader: fairseq's
#       "Saved checkpoint PATH (epoch E @ U updates" pushes PATH as checkpoint_last.pt at U; a
#       script's "tpubuild-checkpoint STEP" pushes the folder DIR at STEP.
#
# The position is the update or step number a plug-in records with its checkpoint, never an mtime
# (a Filestore and a bucket have different clocks). Exit codes: 0 done (or nothing to do), 1 a
# failure in the world (gcloud), 2 bad usage.
set -euo pipefail

MANIFEST=manifest
stage=""
log() { printf '[tpubuild checkpoint-sync %s %s] %s\n' "$(date -u +%H:%M:%S)" "$(hostname)" "$*" >&2; }
die() { log "error: $1"; exit "${2:-1}"; }
usage() { die "usage: checkpoint_sync.sh push|pull|watch --dest gs://BUCKET/PREFIX ... (see the file's header)" 2; }

# field TEXT KEY: the value of KEY=... in a manifest's text (empty: none).
field() { sed -n "s/^$2=//p" <<<"$1" | head -n 1; }

# manifest DEST: the manifest's text, nothing when there is none; fails on any other error.
manifest() {
  local out err
  err="$(mktemp)"
  if out="$(gcloud storage cat "$1/$MANIFEST" 2>"$err")"; then
    rm -f "$err"
    printf '%s\n' "$out"
    return 0
  fi
  if grep -q 'matched no objects' "$err"; then rm -f "$err"; return 0; fi
  cat "$err" >&2
  rm -f "$err"
  return 1
}

# manifest_generation DEST: the manifest object's GCS generation (0: none), for the precondition.
manifest_generation() {
  local gen
  if gen="$(gcloud storage objects describe "$1/$MANIFEST" --format='value(generation)' 2>/dev/null)"; then
    printf '%s\n' "${gen:-0}"
  elif [[ -z "$(manifest "$1")" ]]; then
    echo 0
  else
    return 1
  fi
}

# fingerprint PATH: what changes when a file or folder is written (names, sizes, mtimes).
fingerprint() { find "$1" -printf '%P %s %T@\n' | LC_ALL=C sort | cksum; }

# upload_tree STAGE URL: every file under STAGE to URL/<its relative path>, one gcloud call per
# folder (a recursive copy asks for the bucket's storage layout first; plain copies do not).
upload_tree() {
  local stage=$1 url=$2 rel files
  while IFS= read -r rel; do
    mapfile -t files < <(find "$stage/$rel" -mindepth 1 -maxdepth 1 -type f | LC_ALL=C sort)
    ((${#files[@]})) || continue
    gcloud storage cp "${files[@]}" "$url/${rel:+$rel/}" >/dev/null
  done < <(cd "$stage" && find . -type d -printf '%P\n' | LC_ALL=C sort)
}

# download_tree URL DIR: every object under URL/ into DIR/<its relative path>.
download_tree() {
  local url=$1 dir=$2 obj rel sub
  declare -A groups=()
  while IFS= read -r obj; do
    [[ $obj == "$url/"* && $obj != */ ]] || continue
    rel=${obj#"$url/"}
    sub=$(dirname -- "$rel")
    groups[$sub]+="$obj"$'\n'
  done < <(gcloud storage ls "$url/**")
  for sub in "${!groups[@]}"; do
    mkdir -p "$dir/$sub"
    mapfile -t objs < <(printf '%s' "${groups[$sub]}")
    gcloud storage cp "${objs[@]}" "$dir/$sub/" >/dev/null
  done
}

push() {
  local dest="" position="" srcs=() spec src name gen current cur_pos precondition names=() before
  while [[ $# -gt 0 ]]; do
    case $1 in
      --dest) dest=${2%/}; shift 2 ;;
      --position) position=$2; shift 2 ;;
      --*) usage ;;
      *) srcs+=("$1"); shift ;;
    esac
  done
  [[ $dest == gs://?* && $position =~ ^[0-9]+$ && ${#srcs[@]} -gt 0 ]] || usage
  current="$(manifest "$dest")" || die "cannot read $dest/$MANIFEST"
  cur_pos="$(field "$current" position)"
  if [[ -n $cur_pos ]] && ((cur_pos >= position)); then
    log "$dest already holds position $cur_pos (>= $position): nothing copied"
    return 0
  fi
  precondition="$(manifest_generation "$dest")" || die "cannot read $dest/$MANIFEST"
  stage="$(mktemp -d "${TPUBUILD_SYNC_STAGE:-${TMPDIR:-/tmp}}/tpubuild-checkpoint.XXXXXX")"
  trap 'rm -rf -- "$stage"' EXIT
  mkdir -p "$stage/files"
  for spec in "${srcs[@]}"; do
    src=${spec%%=*}
    name=${spec#*=}
    [[ $spec == *=* ]] || name=$(basename -- "$src")
    [[ -e $src ]] || die "$src does not exist (position $position): nothing copied"
    [[ $name =~ ^[A-Za-z0-9_.-]+$ && $name != manifest ]] || die "'$name' is not a plain name" 2
    # a local copy first, checked unchanged: the bucket gets what was whole when the save ended
    before="$(fingerprint "$src")"
    cp -r -- "$src" "$stage/files/$name"
    if [[ "$(fingerprint "$src")" != "$before" ]]; then
      log "$src changed while it was copied (a newer save?): position $position not copied"
      return 0
    fi
    names+=("$name")
  done
  gen="g-$(printf '%012d' "$position")-$(date -u +%Y%m%dT%H%M%SZ)"
  upload_tree "$stage/files" "$dest/$gen" || die "uploading $dest/$gen failed; $dest/$MANIFEST still names the previous checkpoint"
  printf 'position=%s\ngeneration=%s\nnames=%s\nwritten=%s\nhost=%s\n' "$position" "$gen" "${names[*]}" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(hostname)" >"$stage/manifest"
  if ! gcloud storage cp --if-generation-match="$precondition" "$stage/manifest" "$dest/$MANIFEST" >/dev/null 2>"$stage/err"; then
    cat "$stage/err" >&2
    die "writing $dest/$MANIFEST failed (changed by another copy since it was read?); $gen is not published"
  fi
  log "copied position $position (${names[*]}) to $dest/$gen"
  prune "$dest" "$gen"
}

# prune DEST KEEP: delete every generation under DEST but KEEP, with all their versions.
prune() {
  local dest=$1 keep=$2 url
  while IFS= read -r url; do
    case $url in
      "$dest/$keep/") ;;
      "$dest"/g-*/) gcloud storage rm --all-versions "${url}**" >/dev/null || log "could not delete $url yet (the next copy tries again)" ;;
    esac
  done < <(gcloud storage ls "$dest/")
}

# all_present DIR NAME...: every NAME exists in DIR.
all_present() {
  local dir=$1 name
  shift
  for name in "$@"; do [[ -e $dir/$name ]] || return 1; done
}

pull() {
  local dest="" dir="" local_pos="" current pos gen names name tmp try listed=()
  while [[ $# -gt 0 ]]; do
    case $1 in
      --dest) dest=${2%/}; shift 2 ;;
      --dir) dir=$2; shift 2 ;;
      --local) local_pos=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  [[ $dest == gs://?* && -n $dir && $local_pos =~ ^-?[0-9]+$ ]] || usage
  for try in 1 2 3; do
    current="$(manifest "$dest")" || die "cannot read $dest/$MANIFEST"
    pos="$(field "$current" position)" gen="$(field "$current" generation)" names="$(field "$current" names)"
    if [[ -z $pos ]]; then
      log "no checkpoint in $dest: resuming from Filestore's (position $local_pos)"
      return 0
    fi
    [[ $pos =~ ^[0-9]+$ && $gen =~ ^g-[0-9]+-[0-9TZ]+$ && -n $names ]] || die "$dest/$MANIFEST is not a tpubuild manifest"
    if ((local_pos >= pos)); then
      log "Filestore's checkpoint (position $local_pos) is as new as the bucket's ($pos) or newer: resuming from Filestore's"
      return 0
    fi
    mkdir -p "$dir"
    tmp="$(mktemp -d "$dir/.tpubuild-pull.XXXXXX")"
    read -ra listed <<<"$names"
    if download_tree "$dest/$gen" "$tmp" && all_present "$tmp" "${listed[@]}"; then
      for name in "${listed[@]}"; do
        if [[ -d $dir/$name && ! -L $dir/$name ]]; then mv -- "$dir/$name" "$tmp/.old-$name"; fi
        mv -fT -- "$tmp/$name" "$dir/$name"
      done
      rm -rf -- "$tmp"
      log "resuming from the bucket's checkpoint at position $pos ($dest/$gen), newer than Filestore's ($local_pos)"
      return 0
    fi
    rm -rf -- "$tmp"
    log "reading $dest/$gen failed (replaced by a newer copy?); reading the manifest again (try $try of 3)"
  done
  die "could not read the checkpoint named by $dest/$MANIFEST"
}

watch() {
  local dest="" dir="" line path updates lock self
  while [[ $# -gt 0 ]]; do
    case $1 in
      --dest) dest=${2%/}; shift 2 ;;
      --dir) dir=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  [[ $dest == gs://?* && -n $dir ]] || usage
  self="${BASH_SOURCE[0]}"
  lock="${TPUBUILD_SYNC_LOCK:-${TMPDIR:-/tmp}/tpubuild-checkpoint-sync.lock}"
  local fairseq='Saved checkpoint ([^ ]+) \(epoch [0-9]+ @ ([0-9]+) updates' script='tpubuild-checkpoint ([0-9]+)'
  while IFS= read -r line; do
    if [[ $line =~ $fairseq ]]; then
      path=${BASH_REMATCH[1]} updates=${BASH_REMATCH[2]}
      flock "$lock" bash "$self" push --dest "$dest" --position "$updates" "$path=checkpoint_last.pt" </dev/null &
    elif [[ $line =~ $script ]]; then
      flock "$lock" bash "$self" push --dest "$dest" --position "${BASH_REMATCH[1]}" "$dir" </dev/null &
    fi
  done
  wait || true
}

[[ $# -gt 0 ]] || usage
cmd=$1
shift
case $cmd in
  push) push "$@" ;;
  pull) pull "$@" ;;
  watch) watch "$@" ;;
  *) usage ;;
esac
