#!/usr/bin/env bash
# tpubuild seeder, part 2: the startup script of the short-lived seeder VM that run_seeder.sh
# creates. It fills the shared persistent disk with GCS_DATASET, safely, and says how it went
# through the guest attribute tpubuild/seed:
#   running:<step>      while it works
#   done:<summary>      the disk holds the dataset (copied now, or already there)
#   error:<message>     it stopped; nothing was wiped that was not explicitly allowed
#
# Instance metadata (set by run_seeder.sh):
#   tpubuild-gcs-dataset   source URI, gs://bucket/path (wildcards allowed)       required
#   tpubuild-workspace     gs://<state bucket>/workspace/<env>: where SEED_PREP_SCRIPT lives
#   tpubuild-prep-script   repo-relative path of MIG_SEED_DATA_PREP_SCRIPT, or empty
#   tpubuild-allow-wipe    true: a disk holding something else may be reformatted   (default false)
#   tpubuild-seed-device   device name of the disk               (default tpubuild-seed)
#   tpubuild-seed-mode     seed (attached read-write) or check (attached read-only because the
#                          MIG or TPU VM holds it: only confirms that it holds the dataset)
#
# Rules: format only a disk on which blkid finds nothing (no filesystem, no partition table);
# a marker /.tpubuild-seed.json records source URI, object count and completion; the same
# complete source is never copied again; a different marker, a non-empty disk without marker, or
# a foreign filesystem is refused unless tpubuild-allow-wipe is true, in which case it is
# reformatted. The copy uses `gcloud storage cp -r` (parallel). The prep script runs after the
# copy, in the disk's root, before the marker is completed.
#
# Test-only settings (never set on a real machine): TPUBUILD_METADATA_HOST, TPUBUILD_DEV_ROOT
# (prefix for /dev), TPUBUILD_MOUNT_ROOT (prefix for the mount point), TPUBUILD_LOG (default
# /dev/console when writable), TPUBUILD_ATTEMPTS (default 5), TPUBUILD_BACKOFF_S (default 5).
set -euo pipefail

readonly SELF="tpubuild-seed"
readonly MARKER=".tpubuild-seed.json"
MD_HOST="${TPUBUILD_METADATA_HOST:-metadata.google.internal}"
DEV_ROOT="${TPUBUILD_DEV_ROOT:-}"
MNT="${TPUBUILD_MOUNT_ROOT:-}/mnt/tpubuild-seed"
ATTEMPTS="${TPUBUILD_ATTEMPTS:-5}"
BACKOFF_S="${TPUBUILD_BACKOFF_S:-5}"
if [[ -n "${TPUBUILD_LOG:-}" ]]; then
  LOG_FILE="$TPUBUILD_LOG"
elif [[ -w /dev/console ]]; then
  LOG_FILE=/dev/console
else
  LOG_FILE=""
fi
TMP_DIR=""
STEP="start"
REPORTED=0
MOUNTED=0

log() {
  local line
  TZ=UTC0 printf -v line '%(%Y-%m-%dT%H:%M:%SZ)T %s: %s' -1 "$SELF" "$*"
  printf '%s\n' "$line" >&2
  if [[ -n "$LOG_FILE" ]]; then printf '%s\n' "$line" >>"$LOG_FILE" 2>/dev/null || true; fi
}

# report VALUE: sets the guest attribute tpubuild/seed (retried: run_seeder.sh waits for it).
report() {
  local n
  for ((n = 1; n <= ATTEMPTS; n++)); do
    if curl -sf -o /dev/null -X PUT --connect-timeout 5 --max-time 10 -H 'Metadata-Flavor: Google' \
      --data "${1:0:4000}" "http://${MD_HOST}/computeMetadata/v1/instance/guest-attributes/tpubuild/seed"; then
      return 0
    fi
    sleep "$BACKOFF_S"
  done
  log "WARNING: cannot set guest attribute tpubuild/seed (is enable-guest-attributes=TRUE set?)"
}

step() {
  STEP="$1"
  log "step: $1"
  report "running:$1"
}

fail() {
  log "FATAL: $*"
  REPORTED=1
  report "error:$*"
  exit 1
}

on_exit() {
  local rc=$?
  trap - EXIT
  if [[ $MOUNTED -eq 1 ]]; then umount "$MNT" 2>/dev/null || true; fi
  if [[ -n "$TMP_DIR" ]]; then rm -rf "$TMP_DIR"; fi
  if [[ $rc -ne 0 && $REPORTED -eq 0 ]]; then
    log "FATAL: step '${STEP}' failed (exit ${rc}); see the lines above"
    report "error:step '${STEP}' failed (exit ${rc}); see the seeder VM's serial console"
  fi
  exit "$rc"
}

# md KEY: an instance attribute, empty when absent; fails when the server never answers.
md() {
  local n code
  for ((n = 1; n <= ATTEMPTS; n++)); do
    code="$(curl -s -o "$TMP_DIR/md" -w '%{http_code}' --connect-timeout 5 --max-time 20 \
      -H 'Metadata-Flavor: Google' "http://${MD_HOST}/computeMetadata/v1/instance/attributes/$1")" || code=000
    case "$code" in
      200) cat "$TMP_DIR/md"; return 0 ;;
      404) return 0 ;;
    esac
    sleep "$BACKOFF_S"
  done
  log "FATAL: metadata server http://${MD_HOST} does not answer"
  exit 1
}

json_escape() {
  local s="${1//\\/\\\\}"
  s="${s//\"/\\\"}"
  printf '%s' "$s"
}

# marker_field NAME: the raw value of a top-level field in the marker (strings unescaped).
marker_field() {
  local v
  v="$(sed -n "s/^  \"$1\": \(.*\),\{0,1\}\$/\1/p" "$MNT/$MARKER" | head -n 1)"
  v="${v%,}"
  if [[ "$v" == \"*\" ]]; then
    v="${v:1:${#v}-2}"
    v="${v//\\\"/\"}"
    v="${v//\\\\/\\}"
  fi
  printf '%s' "$v"
}

write_marker() {
  local complete="$1" objects="$2" tmp="$MNT/$MARKER.tmp"
  {
    printf '{\n'
    printf '  "source": "%s",\n' "$(json_escape "$DATASET")"
    printf '  "objects": %s,\n' "$objects"
    printf '  "prep_script": "%s",\n' "$(json_escape "$PREP")"
    printf '  "seeded_at": "%s",\n' "$(TZ=UTC0 printf '%(%Y-%m-%dT%H:%M:%SZ)T' -1)"
    printf '  "complete": %s\n' "$complete"
    printf '}\n'
  } >"$tmp"
  mv -f "$tmp" "$MNT/$MARKER"
}

format_disk() {
  log "formatting ${DEV} as ext4"
  mkfs.ext4 -q -F -L tpubuild-data -m 0 -E lazy_itable_init=0,lazy_journal_init=0,discard "$DEV"
}

mount_disk() {
  mkdir -p "$MNT"
  mount -t ext4 -o "$1" "$DEV" "$MNT"
  MOUNTED=1
}

unmount_disk() {
  if [[ $MOUNTED -eq 1 ]]; then
    sync
    umount "$MNT"
    MOUNTED=0
  fi
}

# disk_is_empty: nothing but lost+found and an unfinished marker of nobody.
disk_is_empty() {
  [[ -z "$(find "$MNT" -mindepth 1 -maxdepth 1 ! -name lost+found -print -quit)" ]]
}

# refuse WHAT: stops unless wiping is allowed; when allowed, reformats and remounts the disk.
refuse_or_wipe() {
  if [[ "$ALLOW_WIPE" != true ]]; then
    fail "disk ${DEVICE} holds $1, not ${DATASET}; refusing to overwrite it. Rerun with _ALLOW_WIPE=true to wipe it, or point GCS_DATASET at what it holds"
  fi
  log "WARNING: disk holds $1; wiping it (ALLOW_WIPE=true)"
  unmount_disk
  format_disk
  mount_disk rw,discard
}

copy_dataset() {
  gcloud storage cp -r "$DATASET" "$MNT/"
}

fetch_prep() {
  gcloud storage cp "${WORKSPACE%/}/${PREP}" "$TMP_DIR/prep-script"
}

run_prep() {
  local rc=0
  [[ "$PREP" != /* && "$PREP" != *..* ]] ||
    fail "SEED_PREP_SCRIPT '${PREP}' must be a repo-relative path without '..'"
  [[ -n "$WORKSPACE" ]] || fail "metadata tpubuild-workspace is empty; cannot fetch SEED_PREP_SCRIPT ${PREP}"
  local n
  for ((n = 1; ; n++)); do
    if fetch_prep; then break; fi
    ((n < ATTEMPTS)) || fail "cannot fetch SEED_PREP_SCRIPT ${WORKSPACE%/}/${PREP}"
    sleep "$BACKOFF_S"
  done
  (cd "$MNT" && TPUBUILD_DATA_DIR="$MNT" TPUBUILD_GCS_DATASET="$DATASET" bash "$TMP_DIR/prep-script") || rc=$?
  [[ $rc -eq 0 ]] || fail "SEED_PREP_SCRIPT ${PREP} failed with exit ${rc}"
}

check_only() {
  # The disk is attached read-only elsewhere: just confirm it already holds the dataset.
  [[ "$FSTYPE" == ext4 ]] ||
    fail "disk ${DEVICE} is attached read-only to other instances and holds no tpubuild filesystem; detach it (destroy the MIG or TPU VM) before seeding"
  mount_disk ro,noload
  if [[ -f "$MNT/$MARKER" && "$(marker_field source)" == "$DATASET" && "$(marker_field complete)" == true ]]; then
    local objects
    objects="$(marker_field objects)"
    unmount_disk
    REPORTED=1
    log "disk already holds ${DATASET} (${objects} objects)"
    report "done:already seeded with ${objects} objects from ${DATASET}"
    exit 0
  fi
  fail "disk ${DEVICE} is attached read-only to other instances and does not hold ${DATASET}; recreate the MIG/TPU VM after seeding (tpubuild update with _TPU/_MIG), or keep the old GCS_DATASET"
}

main() {
  trap on_exit EXIT
  TMP_DIR="$(mktemp -d)"
  step "read metadata"
  DATASET="$(md tpubuild-gcs-dataset)"
  WORKSPACE="$(md tpubuild-workspace)"
  PREP="$(md tpubuild-prep-script)"
  ALLOW_WIPE="$(md tpubuild-allow-wipe)"
  DEVICE="$(md tpubuild-seed-device)"
  DEVICE="${DEVICE:-tpubuild-seed}"
  local mode
  mode="$(md tpubuild-seed-mode)"
  mode="${mode:-seed}"
  ALLOW_WIPE="${ALLOW_WIPE,,}"
  [[ "$DATASET" == gs://?* ]] || fail "metadata tpubuild-gcs-dataset '${DATASET}' is not a gs:// URI"
  [[ "$ALLOW_WIPE" == true || "$ALLOW_WIPE" == false || -z "$ALLOW_WIPE" ]] ||
    fail "metadata tpubuild-allow-wipe '${ALLOW_WIPE}' must be true or false"
  [[ "$mode" == seed || "$mode" == check ]] || fail "metadata tpubuild-seed-mode '${mode}' must be seed or check"
  log "dataset=${DATASET} device=${DEVICE} mode=${mode} allow_wipe=${ALLOW_WIPE:-false}"

  step "find disk"
  DEV="${DEV_ROOT}/dev/disk/by-id/google-${DEVICE}"
  local n
  for ((n = 1; n <= ATTEMPTS; n++)); do
    [[ -e "$DEV" ]] && break
    sleep "$BACKOFF_S"
  done
  [[ -e "$DEV" ]] || fail "disk device ${DEV} does not exist; was the disk attached as device-name ${DEVICE}?"
  local probe pttype
  probe="$(blkid -p -o export "$DEV" 2>/dev/null || true)"
  FSTYPE="$(sed -n 's/^TYPE=//p' <<<"$probe")"
  pttype="$(sed -n 's/^PTTYPE=//p' <<<"$probe")"
  log "blkid: filesystem '${FSTYPE:-none}', partition table '${pttype:-none}'"

  if [[ "$mode" == check ]]; then
    step "check disk"
    check_only
  fi

  step "prepare disk"
  if [[ -z "$FSTYPE" && -z "$pttype" ]]; then
    format_disk
    mount_disk rw,discard
  elif [[ "$FSTYPE" != ext4 ]]; then
    if [[ "$ALLOW_WIPE" != true ]]; then
      fail "disk ${DEVICE} holds a foreign ${FSTYPE:-partitioned} disk (filesystem '${FSTYPE:-none}', partition table '${pttype:-none}'), not ${DATASET}; refusing to overwrite it. Rerun with _ALLOW_WIPE=true to wipe it"
    fi
    log "WARNING: wiping foreign disk contents (ALLOW_WIPE=true)"
    format_disk
    mount_disk rw,discard
  else
    mount_disk rw,discard
    if [[ -f "$MNT/$MARKER" ]]; then
      local source
      source="$(marker_field source)"
      if [[ "$source" == "$DATASET" && "$(marker_field complete)" == true ]]; then
        local objects
        objects="$(marker_field objects)"
        unmount_disk
        REPORTED=1
        log "disk already holds ${DATASET} (${objects} objects); nothing to copy"
        report "done:already seeded with ${objects} objects from ${DATASET}"
        exit 0
      elif [[ "$source" == "$DATASET" ]]; then
        log "an earlier copy of ${DATASET} did not finish; copying again"
      else
        refuse_or_wipe "the dataset ${source}"
      fi
    elif ! disk_is_empty; then
      refuse_or_wipe "files without a tpubuild marker"
    fi
  fi

  step "copy dataset"
  write_marker false 0
  local ok=0
  for ((n = 1; n <= ATTEMPTS; n++)); do
    if copy_dataset; then
      ok=1
      break
    fi
    log "copy attempt ${n}/${ATTEMPTS} failed"
    sleep "$BACKOFF_S"
  done
  [[ $ok -eq 1 ]] || fail "gcloud storage cp -r ${DATASET} failed ${ATTEMPTS} times; check that the seeder's service account can read it"
  local objects
  objects="$(find "$MNT" -xdev -type f ! -name "$MARKER" ! -path "$MNT/lost+found/*" | wc -l)"
  objects="${objects// /}"
  [[ "$objects" -gt 0 ]] || fail "${DATASET} matched no objects"
  log "copied ${objects} objects"

  if [[ -n "$PREP" ]]; then
    step "prep script"
    run_prep
    log "SEED_PREP_SCRIPT ${PREP} finished"
  fi

  step "finish"
  write_marker true "$objects"
  unmount_disk
  REPORTED=1
  report "done:copied ${objects} objects from ${DATASET}"
  log "done: ${objects} objects from ${DATASET}"
}

main "$@"
