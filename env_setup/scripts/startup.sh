#!/usr/bin/env bash
# tpubuild startup script: runs as root at every boot on the MIG workers (node architecture), on
# every TPU VM host (vm architecture) and on every TPU VM of a slice MIG (mig architecture), and
# leaves the machine ready to train or clearly failed.
#
# Inputs come ONLY from the instance metadata that Terraform sets (docs/architecture.md,
# "Instance metadata"): tpubuild-arch, tpubuild-env, tpubuild-mount-point, tpubuild-nfs-ip,
# tpubuild-nfs-share, tpubuild-shared-pd-device, tpubuild-tpu-name, tpubuild-tpu-endpoints,
# tpubuild-workspace, tpubuild-setup-script; plus what Google sets itself: instance/name,
# instance/zone, project/project-id, attributes/created-by (MIG workers) and
# attributes/agent-worker-number (TPU VM hosts). mig adds tpubuild-accelerator-type,
# tpubuild-topology, tpubuild-vm-count, tpubuild-host-bounds, tpubuild-chips-per-host-bounds.
#
# Steps (each logged with a UTC timestamp to the serial console):
#   1. read the metadata;  2. install the NFS client if mount.nfs is missing;
#   3. mount Filestore at ${MOUNT_POINT}/nfs_share (one fstab line, retried with backoff); a host
#      whose metadata has no export (the slice is asked for before Filestore) waits for the export
#      the build writes to ${workspace}/mounts/filestore (filestore-publish) and reads it there;
#   4. mount the shared PD read-only at ${MOUNT_POINT}/shared_pd when it is attached (waiting for
#      its device: on vm the pipeline attaches it after the host is made, once it is seeded);
#   5. elect the leader (vm: worker 0; node: the lexically first instance of the MIG; mig: wait
#      until the MIG lists tpubuild-vm-count live VMs, sort their names: this VM's index is its
#      PJRT worker id, the sorted names are the peers, worker 0 leads);
#   6. write /etc/profile.d/tpubuild.sh (node: XRT_TPU_CONFIG; vm: PJRT_DEVICE=TPU; mig: PJRT_DEVICE=TPU
#      plus TPU_WORKER_ID, TPU_WORKER_HOSTNAMES, TPU_ACCELERATOR_TYPE, TPU_TOPOLOGY, TPU_HOST_BOUNDS,
#      TPU_CHIPS_PER_HOST_BOUNDS and TPU_SKIP_MDS_QUERY, as GKE sets them: a Compute Engine TPU VM
#      has no TPU-API tpu-env metadata);
#   7. check the TPU on the spot (node: every endpoint's port answers; vm: /dev/accel* or /dev/vfio);
#   8. leader only: copy ${workspace}/models to ${MOUNT_POINT}/nfs_share/models;
#   9. run MIG_SETUP_SCRIPT (tpubuild-setup-script) from the workspace;
#  10. write /run/tpubuild/ready. Any failure: a "FATAL:" line, /run/tpubuild/failed, exit 1.
#
# Settings read from the environment. The first group exists for the tests only and is never set
# on a real machine; the second group tunes the retries.
#   TPUBUILD_METADATA_HOST  metadata server host[:port]          (default metadata.google.internal)
#   TPUBUILD_FSTAB          the fstab file to edit               (default /etc/fstab)
#   TPUBUILD_PROFILE_D      the profile.d directory              (default /etc/profile.d)
#   TPUBUILD_MOUNT_ROOT     prefix put before every mount point  (default empty)
#   TPUBUILD_DEV_ROOT       prefix put before every /dev path    (default empty)
#   TPUBUILD_RUN_DIR        status directory (ready/failed/lock) (default /run/tpubuild)
#   TPUBUILD_LOG            file that receives every log line    (default /dev/console when
#                           writable, else syslog through logger; stderr always gets a copy)
#   TPUBUILD_BACKOFF_S      first wait between two attempts, seconds   (default 5)
#   TPUBUILD_BACKOFF_MAX_S  longest wait between two attempts, seconds (default 60)
#   TPUBUILD_NFS_ATTEMPTS   NFS mount attempts                   (default 12, about 8 minutes)
#   TPUBUILD_TPU_ATTEMPTS   TPU check attempts                   (default 10)
#   TPUBUILD_ATTEMPTS       attempts for metadata, apt-get, gcloud and device waits (default 5)
#   TPUBUILD_PEER_ATTEMPTS  mig: listings of the MIG until every VM of the slice is there (default 60)
#   TPUBUILD_PD_WAIT_S      how long to wait for an attached shared PD's device, seconds (default
#                           16200: on vm the pipeline's tpu-attach step attaches the disk once
#                           shared_pd-seed has written it, up to its 4 h, so a host may come first)
#   TPUBUILD_PD_POLL_S      seconds between two looks for that device, or for the NFS export (default 30)
#   TPUBUILD_NFS_WAIT_S     how long to wait for the NFS export in the workspace when the metadata
#                           has none, seconds (default 5400: the build writes it once Filestore is
#                           made, minutes after the slice was asked for)
#   TPUBUILD_TCP_TIMEOUT_S  timeout of one TCP connect to a TPU endpoint (default 5)
#   TPUBUILD_CONF_ROOT      prefix put before /etc/rsyslog.d, /etc/google-cloud-ops-agent and
#                           /var/log of the training-log shipping (tests only; default empty)
#   TPUBUILD_OPS_AGENT_SCRIPT_URL  Google's Ops Agent repo script (tests: a file:// stand-in)
set -euo pipefail

readonly SELF="tpubuild-startup"
MD_HOST="${TPUBUILD_METADATA_HOST:-metadata.google.internal}"
FSTAB="${TPUBUILD_FSTAB:-/etc/fstab}"
PROFILE_D="${TPUBUILD_PROFILE_D:-/etc/profile.d}"
MOUNT_ROOT="${TPUBUILD_MOUNT_ROOT:-}"
DEV_ROOT="${TPUBUILD_DEV_ROOT:-}"
RUN_DIR="${TPUBUILD_RUN_DIR:-/run/tpubuild}"
BACKOFF_S="${TPUBUILD_BACKOFF_S:-5}"
BACKOFF_MAX_S="${TPUBUILD_BACKOFF_MAX_S:-60}"
NFS_ATTEMPTS="${TPUBUILD_NFS_ATTEMPTS:-12}"
TPU_ATTEMPTS="${TPUBUILD_TPU_ATTEMPTS:-10}"
ATTEMPTS="${TPUBUILD_ATTEMPTS:-5}"
TCP_TIMEOUT_S="${TPUBUILD_TCP_TIMEOUT_S:-5}"
PEER_ATTEMPTS="${TPUBUILD_PEER_ATTEMPTS:-60}"
PD_WAIT_S="${TPUBUILD_PD_WAIT_S:-16200}"
PD_POLL_S="${TPUBUILD_PD_POLL_S:-30}"
NFS_WAIT_S="${TPUBUILD_NFS_WAIT_S:-5400}"
CONF_ROOT="${TPUBUILD_CONF_ROOT:-}"
OPS_AGENT_SCRIPT_URL="${TPUBUILD_OPS_AGENT_SCRIPT_URL:-https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh}"
if [[ -n "${TPUBUILD_LOG:-}" ]]; then
  LOG_FILE="$TPUBUILD_LOG"
elif [[ -w /dev/console ]]; then
  LOG_FILE=/dev/console
else
  LOG_FILE=""
fi

TMP_DIR=""
STEP="start"
FAILED=0

# ---------------------------------------------------------------------------------------------
# logging, failure, retries
# ---------------------------------------------------------------------------------------------
# now: the UTC time, ISO 8601 (bash builtin, no fork).
now() { TZ=UTC0 printf '%(%Y-%m-%dT%H:%M:%SZ)T' -1; }

log() {
  local line
  TZ=UTC0 printf -v line '%(%Y-%m-%dT%H:%M:%SZ)T %s: %s' -1 "$SELF" "$*"
  printf '%s\n' "$line" >&2
  if [[ -n "$LOG_FILE" ]]; then
    printf '%s\n' "$line" >>"$LOG_FILE" 2>/dev/null || true
  elif command -v logger >/dev/null 2>&1; then
    logger -t "$SELF" -- "$*" 2>/dev/null || true
  fi
}

step() {
  STEP="$1"
  log "step: $1"
}

# Best effort: publish the state as guest attribute tpubuild/startup (ignored when disabled).
report() {
  curl -s -o /dev/null -X PUT --connect-timeout 2 --max-time 5 -H 'Metadata-Flavor: Google' \
    --data "$1" "http://${MD_HOST}/computeMetadata/v1/instance/guest-attributes/tpubuild/startup" \
    2>/dev/null || true
}

die() {
  FAILED=1
  log "FATAL: $*"
  mkdir -p "$RUN_DIR" 2>/dev/null || true
  rm -f "$RUN_DIR/ready" 2>/dev/null || true
  printf '%s %s\n' "$(now)" "$*" >"$RUN_DIR/failed" 2>/dev/null || true
  report "error:$*"
  exit 1
}

on_exit() {
  local rc=$?
  trap - EXIT
  if [[ -n "$TMP_DIR" ]]; then rm -rf "$TMP_DIR"; fi
  # A die() inside a command substitution already logged and wrote the failed marker.
  if [[ $rc -ne 0 && $FAILED -eq 0 && ! -e "$RUN_DIR/failed" ]]; then
    die "unexpected failure in step '${STEP}' (exit ${rc}); see the lines above"
  fi
  exit "$rc"
}

# next_delay SECONDS: the wait after SECONDS, doubled and capped at BACKOFF_MAX_S.
next_delay() {
  awk -v d="$1" -v m="$BACKOFF_MAX_S" 'BEGIN { d = d * 2; if (d > m) d = m; print d }'
}

# retry WHAT ATTEMPTS COMMAND...: runs COMMAND until it succeeds, with exponential backoff.
retry() {
  local what="$1" attempts="$2" n=1 delay="$BACKOFF_S"
  shift 2
  while true; do
    if "$@"; then
      return 0
    fi
    if ((n >= attempts)); then
      log "${what}: failed after ${n} attempt(s)"
      return 1
    fi
    log "${what}: attempt ${n}/${attempts} failed; retrying in ${delay}s"
    sleep "$delay"
    delay="$(next_delay "$delay")"
    n=$((n + 1))
  done
}

# ---------------------------------------------------------------------------------------------
# training log -> Cloud Logging (modules/dashboard's step-rate tile)
#
# models/roberta/train.sh sends each fairseq `train_inner` line to syslog with the tag
# tpubuild-train and the prefix "[tpubuild_env=<env>] ". rsyslog files those lines (and only
# those: `stop`) in /var/log/tpubuild-train.log; the Ops Agent's files receiver `tpubuild-train`
# ships that file as the log projects/<project>/logs/tpubuild-train, which the log-based metric
# of builder/inputs/dashboard.py step_log_filter() counts. The Ops Agent is Google's documented agent
# for Compute Engine VMs (logging/docs/agent/ops-agent/installation); it also publishes the
# agent.googleapis.com memory metric of the dashboard's host tiles. Best effort: a host that
# cannot install it (no route to dl.google.com / packages.cloud.google.com) trains all the
# same, with a WARNING on the console; only the dashboard's step-rate tile stays empty.
readonly TRAIN_LOG_TAG="tpubuild-train"

ops_agent_installed() { dpkg-query -W -f='${Status}' google-cloud-ops-agent 2>/dev/null | grep -q "install ok installed"; }

install_ops_agent() {
  curl -fsS --connect-timeout 5 --max-time 120 -o "$TMP_DIR/add-ops-agent-repo.sh" "$OPS_AGENT_SCRIPT_URL" &&
    bash "$TMP_DIR/add-ops-agent-repo.sh" --also-install
}

ship_train_log() {
  local rsyslog_d="${CONF_ROOT}/etc/rsyslog.d" agent_d="${CONF_ROOT}/etc/google-cloud-ops-agent"
  local file="/var/log/${TRAIN_LOG_TAG}.log" tmp
  mkdir -p "$rsyslog_d" "$agent_d" "${CONF_ROOT}/var/log"
  tmp="$(mktemp "${rsyslog_d}/.tpubuild.XXXXXX")"
  {
    echo "# Written by tpubuild's startup.sh: training progress lines for the Ops Agent (edits are lost)."
    echo ":programname, isequal, \"${TRAIN_LOG_TAG}\" ${file}"
    echo "& stop"
  } >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "${rsyslog_d}/30-${TRAIN_LOG_TAG}.conf"
  tmp="$(mktemp "${agent_d}/.tpubuild.XXXXXX")"
  {
    echo "# Written by tpubuild's startup.sh (edits are lost): the built-in syslog and host metrics"
    echo "# stay; this adds the training progress log ${TRAIN_LOG_TAG} (modules/dashboard)."
    echo "logging:"
    echo "  receivers:"
    echo "    ${TRAIN_LOG_TAG}:"
    echo "      type: files"
    echo "      include_paths: [${file}]"
    echo "  service:"
    echo "    pipelines:"
    echo "      ${TRAIN_LOG_TAG}:"
    echo "        receivers: [${TRAIN_LOG_TAG}]"
  } >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "${agent_d}/config.yaml"
  log "wrote ${rsyslog_d}/30-${TRAIN_LOG_TAG}.conf and ${agent_d}/config.yaml"
  if ! ops_agent_installed; then
    if ! retry "installing the Ops Agent" "$ATTEMPTS" install_ops_agent; then
      log "WARNING: the Ops Agent could not be installed; training logs stay on the host and the dashboard's step-rate tile stays empty"
      return 0
    fi
  fi
  if ! systemctl restart rsyslog google-cloud-ops-agent; then
    log "WARNING: could not restart rsyslog and the Ops Agent; the dashboard's step-rate tile may stay empty"
  fi
  return 0
}

# ---------------------------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------------------------
# md_fetch PATH: writes the value to $TMP_DIR/md; status 0 found, 3 absent (404), 1 unreachable.
md_fetch() {
  local code
  code="$(curl -s -o "$TMP_DIR/md" -w '%{http_code}' --connect-timeout 5 --max-time 20 \
    -H 'Metadata-Flavor: Google' "http://${MD_HOST}/computeMetadata/v1/$1")" || code=000
  case "$code" in
    200) return 0 ;;
    404) return 3 ;;
    *) return 1 ;;
  esac
}

# md PATH: prints the value, or nothing when the key is absent; dies when the server never answers.
md() {
  local n=1 delay="$BACKOFF_S" rc
  while true; do
    rc=0
    md_fetch "$1" || rc=$?
    if [[ $rc -eq 0 ]]; then
      cat "$TMP_DIR/md"
      return 0
    elif [[ $rc -eq 3 ]]; then
      return 0
    fi
    if ((n >= ATTEMPTS)); then
      die "metadata server http://${MD_HOST} does not answer for $1"
    fi
    sleep "$delay"
    delay="$(next_delay "$delay")"
    n=$((n + 1))
  done
}

attr() { md "instance/attributes/$1"; }

# need KEY VALUE: dies when a required metadata key is empty.
need() {
  if [[ -z "$2" ]]; then
    die "instance metadata key '$1' is missing or empty; the Terraform module must set it (docs/architecture.md, Instance metadata)"
  fi
}

# ---------------------------------------------------------------------------------------------
# fstab and mounts
# ---------------------------------------------------------------------------------------------
# fstab_set DIR [LINE]: drops every fstab entry whose mount point is DIR and appends LINE (if any).
# The file is rewritten atomically and only when it changes, so any number of runs leaves
# exactly one line per mount point.
fstab_set() {
  local dir="$1" line="${2:-}" tmp
  [[ -e "$FSTAB" ]] || : >"$FSTAB"
  tmp="$(mktemp "${FSTAB}.tpubuild.XXXXXX")"
  awk -v dir="$dir" '$0 !~ /^[[:space:]]*#/ && $2 == dir { next } { print }' "$FSTAB" >"$tmp"
  if [[ -n "$line" ]]; then printf '%s\n' "$line" >>"$tmp"; fi
  if cmp -s "$tmp" "$FSTAB"; then
    rm -f "$tmp"
  else
    chmod 644 "$tmp"
    mv -f "$tmp" "$FSTAB"
    log "fstab: entry for ${dir} ${line:+set}${line:-removed}"
  fi
}

ensure_nfs_client() {
  if command -v mount.nfs >/dev/null 2>&1; then
    log "NFS client present ($(command -v mount.nfs))"
    return 0
  fi
  log "NFS client missing; installing nfs-common"
  export DEBIAN_FRONTEND=noninteractive
  retry "apt-get update" "$ATTEMPTS" apt-get -o DPkg::Lock::Timeout=300 update -qq ||
    die "apt-get update failed; cannot install the NFS client (is there a route to the Debian/Ubuntu mirrors?)"
  retry "apt-get install nfs-common" "$ATTEMPTS" \
    apt-get -o DPkg::Lock::Timeout=300 install -y -qq nfs-common ||
    die "apt-get install nfs-common failed; cannot mount the Filestore share"
  hash -r
  command -v mount.nfs >/dev/null 2>&1 || die "nfs-common installed but mount.nfs is still missing"
}

mount_nfs() {
  local dir="$1" src="$2"
  local opts="rw,hard,timeo=600,retrans=3,rsize=262144,wsize=1048576"
  fstab_set "$dir" "${src} ${dir} nfs ${opts},_netdev,nofail 0 0"
  mkdir -p "$dir"
  if mountpoint -q "$dir"; then
    log "NFS ${src} already mounted at ${dir}"
    return 0
  fi
  retry "NFS mount of ${src}" "$NFS_ATTEMPTS" mount -t nfs -o "$opts" "$src" "$dir" ||
    die "cannot mount Filestore share ${src} at ${dir} after ${NFS_ATTEMPTS} attempts; check the Filestore instance and that this VM's network reaches it"
  log "NFS ${src} mounted at ${dir}"
}

dev_present() { [[ -e "$1" ]]; }

# read_export URI: sets NFS_IP and NFS_SHARE from the export the build wrote (lines nfs_ip=...,
# nfs_share=...); status 1 while it is not there (or not whole).
read_export() {
  local text
  text="$(gcloud storage cat "$1" 2>/dev/null)" || return 1
  NFS_IP="$(sed -n 's/^nfs_ip=//p' <<<"$text")"
  NFS_SHARE="$(sed -n 's/^nfs_share=//p' <<<"$text")"
  [[ -n "$NFS_IP" && -n "$NFS_SHARE" ]]
}

# wait_for LIMIT SAYING COMMAND [ARG...]: runs COMMAND until it succeeds, up to LIMIT seconds,
# saying SAYING followed by the seconds so far in the log (the first look and every tenth after);
# status 1 when it never does.
wait_for() {
  local limit="$1" saying="$2" start="$SECONDS" looks=0
  shift 2
  until "$@"; do
    ((SECONDS - start < limit)) || return 1
    if ((looks % 10 == 0)); then
      log "${saying}$((SECONDS - start))s so far, at most ${limit}s)"
    fi
    looks=$((looks + 1))
    sleep "$PD_POLL_S"
  done
}

# wait_for_export URI: the slice is asked for before Filestore exists, so its hosts' metadata has
# no NFS export; filestore-publish writes it to the workspace once Filestore is made. Waits up to
# NFS_WAIT_S, saying so in the log.
wait_for_export() {
  wait_for "$NFS_WAIT_S" "waiting for the Filestore export at ${1}: the build writes it once Filestore is made (filestore-publish; " read_export "$1"
}

# wait_for_disk DEV: the shared PD's device can come after the host: on vm the pipeline attaches
# the disk (tpu-attach) only once shared_pd-seed has written the dataset, so the host waits, up to
# PD_WAIT_S, and says so in its log.
wait_for_disk() {
  wait_for "$PD_WAIT_S" "waiting for the dataset disk ${1}: the pipeline attaches it once shared_pd-seed has copied the dataset (" dev_present "$1"
}

# say_seed DIR: what the seeder's marker (env_setup/seeder/seed_disk.sh) says of the dataset on the
# mounted shared PD. The disk reaches the hosts only after shared_pd-seed (a MIG's apply waits for
# it; on vm tpu-attach attaches it then), and a disk this host holds read-only cannot be written by
# a seeder meanwhile, so there is nothing more to wait for here: a missing or unfinished marker
# means the seed failed or has not run, and the log says so.
say_seed() {
  local marker="$1/.tpubuild-seed.json" from
  if [[ ! -f "$marker" ]]; then
    log "WARNING: shared PD at $1 holds no seeded dataset (no .tpubuild-seed.json): its data, if any, did not come from a finished shared_pd-seed"
  elif ! grep -Eq '^  "complete": true$' "$marker"; then
    log "WARNING: shared PD at $1 holds an unfinished seed (.tpubuild-seed.json says complete: false); rerun the pipeline so shared_pd-seed finishes it"
  else
    from="$(sed -n 's/^  "source": "\(.*\)",$/\1/p' "$marker" | head -n 1)"
    log "shared PD at $1 holds the dataset seeded from ${from:-an unnamed source}"
  fi
}

mount_shared_pd() {
  local dir="$1" device="$2" dev fstype opts
  if [[ -z "$device" ]]; then
    fstab_set "$dir"
    log "shared PD not attached (tpubuild-shared-pd-device is empty); nothing to mount"
    return 0
  fi
  dev="${DEV_ROOT}/dev/disk/by-id/google-${device}"
  wait_for_disk "$dev" ||
    die "shared PD device ${dev} does not exist ${PD_WAIT_S}s after boot although metadata says '${device}' is attached; the build log says whether shared_pd-seed or tpu-attach failed"
  fstype="$(blkid -o value -s TYPE "$dev" 2>/dev/null || true)"
  if [[ -z "$fstype" ]]; then
    fstab_set "$dir"
    log "WARNING: shared PD ${dev} has no filesystem (never seeded: is GCS_DATASET empty?); not mounting it"
    return 0
  fi
  case "$fstype" in
    ext2 | ext3 | ext4) opts="ro,noload" ;; # noload: never replay a journal on a shared read-only disk
    xfs) opts="ro,norecovery" ;;
    *) opts="ro" ;;
  esac
  fstab_set "$dir" "${dev} ${dir} ${fstype} ${opts},nofail 0 0"
  mkdir -p "$dir"
  PD_DIR_MOUNTED="$dir"
  if mountpoint -q "$dir"; then
    log "shared PD already mounted at ${dir}"
  else
    mount -t "$fstype" -o "$opts" "$dev" "$dir" ||
      die "cannot mount shared PD ${dev} (${fstype}) read-only at ${dir}"
    log "shared PD ${dev} (${fstype}) mounted read-only at ${dir}"
  fi
  say_seed "$dir"
}

# ---------------------------------------------------------------------------------------------
# leader election
# ---------------------------------------------------------------------------------------------
list_members() {
  local -a where
  if [[ "$GROUP_SCOPE" == zones/* ]]; then
    where=(--zone "${GROUP_SCOPE#zones/}")
  else
    where=(--region "${GROUP_SCOPE#regions/}")
  fi
  if [[ -n "$PROJECT" ]]; then where+=(--project "$PROJECT"); fi
  gcloud compute instance-groups managed list-instances "$GROUP" "${where[@]}" \
    --format='value(instance.basename(),currentAction)' >"$TMP_DIR/members"
}

# live_members: the names of the MIG's instances that are not going away, sorted (C locale).
live_members() {
  awk '$2 != "DELETING" && $2 != "ABANDONING" && $1 != "" { print $1 }' "$TMP_DIR/members" | LC_ALL=C sort -u
}

# slice_complete: lists the MIG and succeeds when it has VM_COUNT live VMs, this one among them.
slice_complete() {
  list_members || return 1
  local n
  n="$(live_members | wc -l)"
  if [[ "$n" -ne "$VM_COUNT" ]]; then
    log "MIG ${GROUP} lists ${n} of ${VM_COUNT} VMs"
    return 1
  fi
  live_members | grep -qxF -- "$NAME" || { log "this VM (${NAME}) is not in MIG ${GROUP}'s list yet"; return 1; }
}

# Sets LEADER to 1 when this host is the leader, else 0 (and WORKER_NUMBER on TPU VMs).
elect_leader() {
  local name zone created_by first
  if [[ "$ARCH" == vm ]]; then
    WORKER_NUMBER="$(attr agent-worker-number)"
    [[ "$WORKER_NUMBER" =~ ^[0-9]+$ ]] ||
      die "metadata agent-worker-number is '${WORKER_NUMBER}', not a number; is this a TPU VM host?"
    log "TPU VM worker number ${WORKER_NUMBER}"
    if [[ "$WORKER_NUMBER" -eq 0 ]]; then LEADER=1; else LEADER=0; fi
    return 0
  fi
  name="$(md instance/name)"
  need instance/name "$name"
  created_by="$(attr created-by)"
  if [[ "$created_by" =~ /(zones/[^/]+|regions/[^/]+)/instanceGroupManagers/([^/]+)$ ]]; then
    GROUP_SCOPE="${BASH_REMATCH[1]}"
    GROUP="${BASH_REMATCH[2]}"
  else
    zone="$(md instance/zone)"
    need instance/zone "$zone"
    GROUP_SCOPE="zones/${zone##*/}"
    if [[ "$ARCH" == mig ]]; then GROUP="tpu-${ENV_NAME}"; else GROUP="worker-${ENV_NAME}"; fi
  fi
  command -v gcloud >/dev/null 2>&1 || die "gcloud is not installed; cannot list the MIG to elect the leader"
  if [[ "$ARCH" == mig ]]; then
    NAME="$name"
    retry "waiting for the ${VM_COUNT} VMs of MIG ${GROUP}" "$PEER_ATTEMPTS" slice_complete ||
      die "MIG ${GROUP} does not list ${VM_COUNT} live VMs including ${name}; PJRT needs every worker of the slice (the service account needs compute.instanceGroupManagers.get: modules/tpu_mig_access grants it with the custom role tpubuild_<env>_slice_reader)"
    WORKER_HOSTNAMES="$(live_members | paste -sd, -)"
    WORKER_NUMBER="$(live_members | awk -v n="$name" '$1 == n { print NR - 1 }')"
    log "slice ${GROUP}: worker ${WORKER_NUMBER} of ${VM_COUNT}; peers ${WORKER_HOSTNAMES}"
    if [[ "$WORKER_NUMBER" -eq 0 ]]; then LEADER=1; else LEADER=0; fi
    return 0
  fi
  retry "listing the members of MIG ${GROUP}" "$ATTEMPTS" list_members ||
    die "cannot list the instances of MIG ${GROUP} (${GROUP_SCOPE}); the worker service account needs compute.instanceGroupManagers.get (modules/mig grants it with the custom role tpubuild_<env>_mig_reader; was the mig module applied?)"
  first="$(awk '$2 != "DELETING" && $2 != "ABANDONING" && $1 != "" { print $1 }' "$TMP_DIR/members" |
    LC_ALL=C sort -u | head -n 1)"
  [[ -n "$first" ]] || die "MIG ${GROUP} lists no live instance; cannot elect a leader"
  log "MIG ${GROUP} members: $(awk '{ print $1 }' "$TMP_DIR/members" | LC_ALL=C sort -u | tr '\n' ' ')"
  if ! awk -v n="$name" '$1 == n { found = 1 } END { exit !found }' "$TMP_DIR/members"; then
    log "WARNING: this instance (${name}) is not in the MIG's list yet"
  fi
  if [[ "$first" == "$name" ]]; then LEADER=1; else LEADER=0; fi
}

# ---------------------------------------------------------------------------------------------
# XLA runtime environment
# ---------------------------------------------------------------------------------------------
# xrt_config ENDPOINTS: "ip:port,ip:port" -> "tpu_worker;0;ip:port|tpu_worker;1;ip:port".
# The single-host form is PyTorch/XLA's documented "tpu_worker;0;<ip>:8470"; a pod lists every
# TPU worker with its task index, joined by '|', in the TPU's networkEndpoints order.
xrt_config() {
  local IFS=, ep i=0 out=""
  for ep in $1; do
    ep="${ep//[[:space:]]/}"
    [[ -z "$ep" ]] && continue
    if ! [[ "$ep" =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}:[0-9]{1,5}$ ]]; then
      die "metadata tpubuild-tpu-endpoints has '${ep}', not an ip:port; it must come from the TPU's network endpoints"
    fi
    out="${out:+${out}|}tpu_worker;${i};${ep}"
    i=$((i + 1))
  done
  [[ -n "$out" ]] || die "metadata tpubuild-tpu-endpoints is empty; the TPU Node has no endpoint"
  printf '%s' "$out"
}

# squote VALUE: VALUE as a single-quoted POSIX shell word.
squote() {
  local q="'\\''"
  printf "'%s'" "${1//\'/$q}"
}

write_profile() {
  local file="$PROFILE_D/tpubuild.sh" tmp
  mkdir -p "$PROFILE_D"
  tmp="$(mktemp "${file}.XXXXXX")"
  {
    echo "# Written by tpubuild's startup.sh at every boot; edits are lost. Read by login shells and the launcher."
    echo "export TPUBUILD_ENV=$(squote "$ENV_NAME")"
    echo "export TPUBUILD_ARCH=$(squote "$ARCH")"
    echo "export TPUBUILD_MOUNT_POINT=$(squote "$MP_DIR")"
    echo "export TPUBUILD_NFS_DIR=$(squote "$NFS_DIR")"
    echo "export TPUBUILD_SHARED_PD_DIR=$(squote "$PD_DIR_MOUNTED")"
    echo "export TPUBUILD_TPU_NAME=$(squote "$TPU_NAME")"
    echo "export TPUBUILD_WORKSPACE=$(squote "$WORKSPACE")"
    echo "export TPUBUILD_LEADER=$(squote "$LEADER")"
    if [[ "$ARCH" == node ]]; then
      echo "export TPUBUILD_XRT_TPU_CONFIG=$(squote "$XRT_CONFIG")"
      echo "# torch_xla.distributed.xla_dist exports its own XRT_* variables (XRT_LOCAL_WORKER among"
      echo "# them) before it sources /etc/profile: leave XRT_TPU_CONFIG to it in that case."
      # shellcheck disable=SC2016 # written literally, expanded when the profile is read
      echo 'if [ -z "${XRT_LOCAL_WORKER:-}" ]; then'
      echo "  export XRT_TPU_CONFIG=$(squote "$XRT_CONFIG")"
      echo 'fi'
    else
      echo "export TPUBUILD_WORKER_NUMBER=$(squote "$WORKER_NUMBER")"
      echo "export PJRT_DEVICE=TPU"
    fi
    if [[ "$ARCH" == mig ]]; then
      echo "# PJRT multi-host on Compute Engine TPU VMs: the worker id and peers come from the slice's MIG."
      echo "export TPU_SKIP_MDS_QUERY=true"
      echo "export TPU_WORKER_ID=$(squote "$WORKER_NUMBER")"
      echo "export TPU_WORKER_HOSTNAMES=$(squote "$WORKER_HOSTNAMES")"
      echo "export TPU_ACCELERATOR_TYPE=$(squote "$ACCELERATOR_TYPE")"
      echo "export TPU_TOPOLOGY=$(squote "$TOPOLOGY")"
      echo "export TPU_HOST_BOUNDS=$(squote "$HOST_BOUNDS")"
      echo "export TPU_CHIPS_PER_HOST_BOUNDS=$(squote "$CHIPS_PER_HOST_BOUNDS")"
    fi
  } >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$file"
  log "wrote ${file}"
}

tcp_open() {
  # shellcheck disable=SC2016 # $1/$2 expand in the child bash
  timeout "$TCP_TIMEOUT_S" bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

tpu_devices_present() {
  compgen -G "${DEV_ROOT}/dev/accel*" >/dev/null || [[ -e "${DEV_ROOT}/dev/vfio" ]]
}

check_tpu() {
  local IFS=, ep
  if [[ "$ARCH" == node ]]; then
    for ep in $ENDPOINTS; do
      ep="${ep//[[:space:]]/}"
      [[ -z "$ep" ]] && continue
      retry "TPU endpoint ${ep}" "$TPU_ATTEMPTS" tcp_open "${ep%:*}" "${ep##*:}" ||
        die "TPU ${TPU_NAME} endpoint ${ep} does not answer; XRT_TPU_CONFIG would point XLA at nothing. Check 'gcloud compute tpus describe ${TPU_NAME}' (state READY, networkEndpoints) and the firewall"
      log "TPU endpoint ${ep} answers"
    done
  else
    retry "TPU devices" "$TPU_ATTEMPTS" tpu_devices_present ||
      die "no TPU device on this host (neither ${DEV_ROOT}/dev/accel* nor ${DEV_ROOT}/dev/vfio); PJRT_DEVICE=TPU would fail. Check the TPU VM's runtime version"
    log "TPU devices present"
  fi
}

# ---------------------------------------------------------------------------------------------
# leader work and user customisation
# ---------------------------------------------------------------------------------------------
seed_models() {
  gcloud storage cp -r "${WORKSPACE%/}/models" "${NFS_DIR}/"
}

fetch_setup_script() {
  gcloud storage cp "${WORKSPACE%/}/${SETUP_SCRIPT}" "$TMP_DIR/setup-script"
}

run_setup_script() {
  local rc=0
  if [[ "$SETUP_SCRIPT" == /* || "$SETUP_SCRIPT" == *..* ]]; then
    die "tpubuild-setup-script '${SETUP_SCRIPT}' must be a path relative to the repository, without '..'"
  fi
  retry "fetching ${SETUP_SCRIPT}" "$ATTEMPTS" fetch_setup_script ||
    die "cannot fetch MIG_SETUP_SCRIPT ${WORKSPACE%/}/${SETUP_SCRIPT}"
  log "running MIG_SETUP_SCRIPT ${SETUP_SCRIPT}"
  (
    cd "$MP_DIR"
    export TPUBUILD_ENV="$ENV_NAME" TPUBUILD_ARCH="$ARCH" TPUBUILD_MOUNT_POINT="$MP_DIR" \
      TPUBUILD_NFS_DIR="$NFS_DIR" TPUBUILD_SHARED_PD_DIR="$PD_DIR_MOUNTED" \
      TPUBUILD_LEADER="$LEADER" TPUBUILD_TPU_NAME="$TPU_NAME" TPUBUILD_WORKSPACE="$WORKSPACE"
    bash "$TMP_DIR/setup-script"
  ) || rc=$?
  [[ $rc -eq 0 ]] || die "MIG_SETUP_SCRIPT ${SETUP_SCRIPT} failed with exit ${rc}"
  log "MIG_SETUP_SCRIPT ${SETUP_SCRIPT} finished"
}

# ---------------------------------------------------------------------------------------------
main() {
  trap on_exit EXIT
  TMP_DIR="$(mktemp -d)"
  mkdir -p "$RUN_DIR"
  exec 9>"$RUN_DIR/lock"
  flock -w 900 9 || die "another startup run holds ${RUN_DIR}/lock"
  rm -f "$RUN_DIR/ready" "$RUN_DIR/failed"
  report "running"

  step "read metadata"
  ARCH="$(attr tpubuild-arch)"
  ENV_NAME="$(attr tpubuild-env)"
  local mount_point nfs_ip nfs_share pd_device
  mount_point="$(attr tpubuild-mount-point)"
  nfs_ip="$(attr tpubuild-nfs-ip)"
  nfs_share="$(attr tpubuild-nfs-share)"
  pd_device="$(attr tpubuild-shared-pd-device)"
  TPU_NAME="$(attr tpubuild-tpu-name)"
  ENDPOINTS="$(attr tpubuild-tpu-endpoints)"
  WORKSPACE="$(attr tpubuild-workspace)"
  SETUP_SCRIPT="$(attr tpubuild-setup-script)"
  PROJECT="$(md project/project-id)"
  need tpubuild-arch "$ARCH"
  need tpubuild-env "$ENV_NAME"
  need tpubuild-mount-point "$mount_point"
  need tpubuild-tpu-name "$TPU_NAME"
  need tpubuild-workspace "$WORKSPACE"
  [[ "$ARCH" == node || "$ARCH" == vm || "$ARCH" == mig ]] ||
    die "metadata tpubuild-arch is '${ARCH}'; expected node, vm or mig"
  [[ "$ARCH" != node ]] || need tpubuild-tpu-endpoints "$ENDPOINTS"
  if [[ "$ARCH" == mig ]]; then
    ACCELERATOR_TYPE="$(attr tpubuild-accelerator-type)"
    TOPOLOGY="$(attr tpubuild-topology)"
    VM_COUNT="$(attr tpubuild-vm-count)"
    HOST_BOUNDS="$(attr tpubuild-host-bounds)"
    CHIPS_PER_HOST_BOUNDS="$(attr tpubuild-chips-per-host-bounds)"
    [[ "$ACCELERATOR_TYPE" =~ ^(v5p|v6e|tpu7x)-[0-9]+$ ]] ||
      die "metadata tpubuild-accelerator-type '${ACCELERATOR_TYPE}' is not a v5p, v6e or tpu7x slice"
    [[ "$TOPOLOGY" =~ ^[0-9]+x[0-9]+(x[0-9]+)?$ ]] || die "metadata tpubuild-topology '${TOPOLOGY}' is not like 4x4 or 2x2x2"
    [[ "$VM_COUNT" =~ ^[1-9][0-9]*$ ]] || die "metadata tpubuild-vm-count '${VM_COUNT}' is not a positive number"
    [[ "$HOST_BOUNDS" =~ ^[0-9]+,[0-9]+,[0-9]+$ ]] || die "metadata tpubuild-host-bounds '${HOST_BOUNDS}' is not like 2,2,1"
    [[ "$CHIPS_PER_HOST_BOUNDS" =~ ^[0-9]+,[0-9]+,[0-9]+$ ]] ||
      die "metadata tpubuild-chips-per-host-bounds '${CHIPS_PER_HOST_BOUNDS}' is not like 2,2,1"
  fi
  [[ "$mount_point" =~ ^/[A-Za-z0-9._/-]*$ ]] ||
    die "metadata tpubuild-mount-point '${mount_point}' must be an absolute path of letters, digits, '.', '_', '-', '/'"
  [[ "$WORKSPACE" == gs://* ]] || die "metadata tpubuild-workspace '${WORKSPACE}' is not a gs:// URI"
  local nfs_from="metadata tpubuild-nfs-ip"
  if [[ -z "$nfs_ip" && -z "$nfs_share" ]]; then
    # a slice asked for before Filestore (docs/pipeline.md, "The slice first")
    nfs_from="${WORKSPACE%/}/mounts/filestore"
    wait_for_export "$nfs_from" ||
      die "no NFS export at ${nfs_from} ${NFS_WAIT_S}s after boot; the build log says whether filestore-apply or filestore-publish failed"
    nfs_ip="$NFS_IP"
    nfs_share="$NFS_SHARE"
    log "NFS export ${nfs_ip}:/${nfs_share} read from ${nfs_from}"
  fi
  need tpubuild-nfs-ip "$nfs_ip"
  need tpubuild-nfs-share "$nfs_share"
  [[ "$nfs_ip" =~ ^[0-9.]+$ ]] || die "${nfs_from} '${nfs_ip}' is not an IPv4 address"
  [[ "$nfs_share" =~ ^[A-Za-z0-9_]+$ ]] || die "the NFS share '${nfs_share}' (${nfs_from}) is not a Filestore share name"
  [[ "$pd_device" =~ ^[A-Za-z0-9_-]*$ ]] || die "metadata tpubuild-shared-pd-device '${pd_device}' is not a device name"
  MP_DIR="${MOUNT_ROOT}${mount_point%/}"
  NFS_DIR="${MP_DIR}/nfs_share"
  log "arch=${ARCH} env=${ENV_NAME} mount point=${MP_DIR} tpu=${TPU_NAME}"

  step "NFS client"
  ensure_nfs_client

  step "mount Filestore"
  mount_nfs "$NFS_DIR" "${nfs_ip}:/${nfs_share}"

  step "ship the training log"
  ship_train_log

  step "mount shared PD"
  PD_DIR_MOUNTED=""
  mount_shared_pd "${MP_DIR}/shared_pd" "$pd_device"

  step "elect leader"
  WORKER_NUMBER=""
  WORKER_HOSTNAMES=""
  LEADER=0
  elect_leader
  log "leader: $([[ "$LEADER" == 1 ]] && echo "this host" || echo "another host")"

  step "XLA runtime environment"
  XRT_CONFIG=""
  if [[ "$ARCH" == node ]]; then
    XRT_CONFIG="$(xrt_config "$ENDPOINTS")"
    log "XRT_TPU_CONFIG=${XRT_CONFIG}"
  else
    log "PJRT_DEVICE=TPU"
  fi
  write_profile

  step "check TPU"
  check_tpu

  if [[ "$LEADER" == 1 ]]; then
    step "seed models"
    command -v gcloud >/dev/null 2>&1 || die "gcloud is not installed; cannot copy the models to the share"
    retry "copying ${WORKSPACE%/}/models" "$ATTEMPTS" seed_models ||
      die "cannot copy ${WORKSPACE%/}/models to ${NFS_DIR}/models"
    log "models copied to ${NFS_DIR}/models"
  fi

  if [[ -n "$SETUP_SCRIPT" ]]; then
    step "MIG_SETUP_SCRIPT"
    run_setup_script
  fi

  step "ready"
  printf '%s arch=%s leader=%s\n' "$(now)" "$ARCH" "$LEADER" >"$RUN_DIR/ready"
  report "ready"
  log "ready: arch=${ARCH} leader=${LEADER}"
}

main "$@"
