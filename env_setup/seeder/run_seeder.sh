#!/usr/bin/env bash
# tpubuild seeder, part 1: runs in the pipeline's shared_pd-seed step (gcloud image, from the
# source tree). It creates a short-lived VM "seed-<ENV_BUILD_NAME>" with the shared PD attached,
# whose startup script (env_setup/seeder/seed_disk.sh) fills the disk from GCS_DATASET; it waits
# for that VM's guest attribute tpubuild/seed (done:... / error:...), and deletes the VM in every
# case. It is safe to rerun: a seeder VM left by an earlier run is deleted first, and a disk that
# already holds the dataset is not copied again.
#
# Environment (set by the pipeline):
#   PROJECT_ID ZONE ENV_BUILD_NAME DISK_NAME GCS_DATASET   required
#   WORKSPACE_GCS     gs://<state bucket>/workspace/<env> (where SEED_PREP_SCRIPT is read from)
#   SEED_PREP_SCRIPT  repo-relative path of MIG_SEED_DATA_PREP_SCRIPT, or empty
#   ALLOW_WIPE        true|false (default false): may a disk holding something else be reformatted
#   SEED_TIMEOUT_S    how long to wait for the VM, seconds (default 7200)
#   DISK_TYPE         the disk's type, SHARED_PD_DISK_TYPE (default pd-balanced)
# Optional:
#   SEED_MACHINE_TYPE (e2-standard-8; c3-standard-8 for hyperdisk-ml, which E2 cannot attach)  SEED_IMAGE_FAMILY (debian-12)  SEED_IMAGE_PROJECT (debian-cloud)
#   SEED_NETWORK (default)  SEED_SUBNET (none)  SEED_SERVICE_ACCOUNT (the project's default)
#   SEED_SCOPES (storage-ro,logging-write)  SEED_POLL_S (15)
# The VM has no external IP: its subnet needs Private Google Access to reach Cloud Storage.
#
# When the disk is attached to other instances (the MIG or the TPU VM, read-only), it cannot be
# attached read-write: the seeder VM then attaches it read-only and only checks that it already
# holds GCS_DATASET (tpubuild-seed-mode=check).
#
# Hyperdisk ML (DISK_TYPE=hyperdisk-ml: the dataset disk of generations whose hosts attach only
# Hyperdisk) is attached read-only to many VMs only in access mode READ_ONLY_MANY, and written only
# in READ_WRITE_SINGLE. modules/shared_pd creates it READ_WRITE_SINGLE (blank) or READ_ONLY_MANY
# (restored from a snapshot). Once the seeder VM has written it and is deleted, this script sets
# READ_ONLY_MANY (gcloud compute disks update --access-mode); a disk already READ_ONLY_MANY is only
# checked, read-only, like a disk the hosts hold.
#
# Exit: 0 seeded (or already seeded); 1 the seeder failed, timed out, or its VM could not be
# deleted; 2 a missing or malformed setting.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
readonly SEED_SCRIPT="env_setup/seeder/seed_disk.sh"

log() {
  local line
  TZ=UTC0 printf -v line '%(%Y-%m-%dT%H:%M:%SZ)T run_seeder: %s' -1 "$*"
  printf '%s\n' "$line" >&2
}

bad() {
  log "ERROR: $*"
  exit 2
}

for var in PROJECT_ID ZONE ENV_BUILD_NAME DISK_NAME GCS_DATASET; do
  [[ -n "${!var:-}" ]] || bad "${var} is not set; the shared_pd-seed step must pass it"
done
WORKSPACE_GCS="${WORKSPACE_GCS:-}"
SEED_PREP_SCRIPT="${SEED_PREP_SCRIPT:-}"
ALLOW_WIPE="${ALLOW_WIPE:-false}"
ALLOW_WIPE="${ALLOW_WIPE,,}"
SEED_TIMEOUT_S="${SEED_TIMEOUT_S:-7200}"
SEED_POLL_S="${SEED_POLL_S:-15}"
DISK_TYPE="${DISK_TYPE:-pd-balanced}"
if [[ "$DISK_TYPE" == hyperdisk-ml ]]; then SEED_MACHINE_TYPE="${SEED_MACHINE_TYPE:-c3-standard-8}"; fi
[[ "$GCS_DATASET" == gs://?* ]] || bad "GCS_DATASET '${GCS_DATASET}' is not a gs:// URI"
[[ "$ALLOW_WIPE" == true || "$ALLOW_WIPE" == false ]] || bad "ALLOW_WIPE '${ALLOW_WIPE}' must be true or false"
[[ "$SEED_TIMEOUT_S" =~ ^[1-9][0-9]*$ ]] || bad "SEED_TIMEOUT_S '${SEED_TIMEOUT_S}' must be a positive number of seconds"
if [[ -n "$SEED_PREP_SCRIPT" && -z "$WORKSPACE_GCS" ]]; then
  bad "SEED_PREP_SCRIPT is set but WORKSPACE_GCS is not; the seeder reads the script from the workspace"
fi
[[ -f "$SEED_SCRIPT" ]] || bad "${SEED_SCRIPT} is missing from the source tree"

readonly VM="seed-${ENV_BUILD_NAME}"
readonly DEVICE="tpubuild-seed"
LOC=(--project "$PROJECT_ID" --zone "$ZONE")
TMP_DIR="$(mktemp -d)"

vm_exists() {
  gcloud compute instances describe "$VM" "${LOC[@]}" --format='value(name)' >/dev/null 2>&1
}

delete_vm() {
  # --keep-disks=data: the shared PD (auto-delete=no anyway) must survive; the boot disk goes.
  gcloud compute instances delete "$VM" "${LOC[@]}" --quiet --keep-disks=data
}

serial_tail() {
  log "last lines of ${VM}'s serial console:"
  gcloud compute instances get-serial-port-output "$VM" "${LOC[@]}" 2>/dev/null |
    grep -E 'tpubuild-seed|startup-script' | tail -n 40 >&2 || true
}

cleanup() {
  local rc=$?
  trap - EXIT
  rm -rf "$TMP_DIR"
  if vm_exists; then
    log "deleting seeder VM ${VM}"
    if ! delete_vm; then
      log "ERROR: could not delete seeder VM ${VM}; it still holds ${DISK_NAME}. Delete it: gcloud compute instances delete ${VM} --zone ${ZONE} --project ${PROJECT_ID} --keep-disks=data"
      rc=1
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT

if vm_exists; then
  log "seeder VM ${VM} is left from an earlier run; deleting it first"
  delete_vm
fi

users="$(gcloud compute disks describe "$DISK_NAME" "${LOC[@]}" --format='value(users)')" || {
  log "ERROR: disk ${DISK_NAME} not found in ${ZONE} (project ${PROJECT_ID}); apply the shared_pd module first"
  exit 1
}
others=()
IFS=';' read -r -a all_users <<<"$users"
for u in "${all_users[@]}"; do
  [[ -n "$u" && "${u##*/}" != "$VM" ]] && others+=("${u##*/}")
done
mode=seed
disk_mode=rw
if ((${#others[@]} > 0)); then
  mode=check
  disk_mode=ro
  log "disk ${DISK_NAME} is attached to ${others[*]}; attaching it read-only to check that it holds ${GCS_DATASET}"
elif [[ "$DISK_TYPE" == hyperdisk-ml ]] &&
  [[ "$(gcloud compute disks describe "$DISK_NAME" "${LOC[@]}" --format='value(accessMode)')" == READ_ONLY_MANY ]]; then
  mode=check
  disk_mode=ro
  log "disk ${DISK_NAME} is READ_ONLY_MANY (written already); attaching it read-only to check that it holds ${GCS_DATASET}"
fi

# read_only_many: the written Hyperdisk ML becomes READ_ONLY_MANY, the access mode in which every
# host attaches it (Google changes it only while no VM holds the disk: the seeder VM goes first).
read_only_many() {
  [[ "$DISK_TYPE" == hyperdisk-ml && "$mode" == seed ]] || return 0
  delete_vm || {
    log "ERROR: could not delete seeder VM ${VM} to make ${DISK_NAME} READ_ONLY_MANY"
    return 1
  }
  gcloud compute disks update "$DISK_NAME" "${LOC[@]}" --access-mode=READ_ONLY_MANY || {
    log "ERROR: ${DISK_NAME} is written but still READ_WRITE_SINGLE; set it: gcloud compute disks update ${DISK_NAME} --zone ${ZONE} --project ${PROJECT_ID} --access-mode=READ_ONLY_MANY"
    return 1
  }
  log "disk ${DISK_NAME} is READ_ONLY_MANY: every host attaches it read-only"
}

# Metadata values go through files: a GCS URI may hold commas, which --metadata would split.
from_file="startup-script=${SEED_SCRIPT}"
add_value() { # add_value KEY VALUE: one more metadata key, skipped when VALUE is empty
  [[ -n "$2" ]] || return 0
  printf '%s' "$2" >"$TMP_DIR/$1"
  from_file+=",$1=${TMP_DIR}/$1"
}
add_value tpubuild-gcs-dataset "$GCS_DATASET"
add_value tpubuild-workspace "$WORKSPACE_GCS"
add_value tpubuild-prep-script "$SEED_PREP_SCRIPT"
add_value tpubuild-allow-wipe "$ALLOW_WIPE"

create=(
  gcloud compute instances create "$VM" "${LOC[@]}"
  --machine-type "${SEED_MACHINE_TYPE:-e2-standard-8}"
  --image-family "${SEED_IMAGE_FAMILY:-debian-12}"
  --image-project "${SEED_IMAGE_PROJECT:-debian-cloud}"
  --boot-disk-size 20GB
  --no-address
  --shielded-secure-boot --shielded-vtpm --shielded-integrity-monitoring
  --network "${SEED_NETWORK:-default}"
  --scopes "${SEED_SCOPES:-storage-ro,logging-write}"
  --labels "tpubuild-env=${ENV_BUILD_NAME},managed-by=tpubuild,tpubuild-role=seeder"
  --disk "name=${DISK_NAME},device-name=${DEVICE},mode=${disk_mode},boot=no,auto-delete=no"
  --metadata "enable-guest-attributes=TRUE,tpubuild-seed-device=${DEVICE},tpubuild-seed-mode=${mode}"
  --metadata-from-file "$from_file"
)
if [[ -n "${SEED_SUBNET:-}" ]]; then create+=(--subnet "$SEED_SUBNET"); fi
if [[ -n "${SEED_SERVICE_ACCOUNT:-}" ]]; then create+=(--service-account "$SEED_SERVICE_ACCOUNT"); fi

log "creating seeder VM ${VM} (${mode}, disk ${DISK_NAME} ${disk_mode}) for ${GCS_DATASET}"
"${create[@]}" || {
  log "ERROR: could not create seeder VM ${VM}; see gcloud's message above"
  exit 1
}

log "waiting up to ${SEED_TIMEOUT_S}s for ${VM}'s guest attribute tpubuild/seed"
deadline=$((SECONDS + SEED_TIMEOUT_S))
last=""
while true; do
  value="$(gcloud compute instances get-guest-attributes "$VM" "${LOC[@]}" \
    --query-path=tpubuild/seed --format='value(value)' 2>/dev/null || true)"
  case "$value" in
    done | done:*)
      log "seeded: ${value#done:}"
      read_only_many || exit 1
      exit 0
      ;;
    error:*)
      serial_tail
      log "ERROR: the seeder VM reported: ${value#error:}"
      exit 1
      ;;
  esac
  if [[ -n "$value" && "$value" != "$last" ]]; then
    log "seeder: ${value}"
    last="$value"
  fi
  if ((SECONDS >= deadline)); then
    serial_tail
    log "ERROR: timed out after ${SEED_TIMEOUT_S}s waiting for the seeder VM ${VM} (last state: ${last:-none}); raise SEED_TIMEOUT_S for large datasets"
    exit 1
  fi
  sleep "$SEED_POLL_S"
done
