# TPU_ARCH="mig", plan module mig: a TPU slice as a Compute Engine managed instance group of TPU
# VMs (v5p, v6e, TPU7x). Three resources that must live in one state: Google refuses to delete an
# instance template or a workload policy that a MIG uses, and only inside one state can Terraform
# order "create the new one, point the MIG at it, delete the old one" (create_before_destroy).
#
# Docs: https://docs.cloud.google.com/compute/docs/tpus/create-tpu-mig-multi-host-slice
# (instance template with a TPU machine type + workload policy HIGH_THROUGHPUT with the slice's
# accelerator_topology + MIG with target size = VMs of the slice). A MIG's workload policy can't
# change while the group has VMs; the pipeline drains the group first (docs/modules.md, "Resize").

provider "google" {
  project = var.project_id
  zone    = var.zone
}

# The calendar-mode request and the workload policy's accelerator_topology_mode (google-beta only).
provider "google-beta" {
  project = var.project_id
  zone    = var.zone
}

# ---- what the other modules applied, read from their state (same bucket, <env>/<module>) ----

# The hosts' identity and network tag are NOT read from the access module's state (plan module
# tpu, modules/tpu_mig_access): both are deterministic (local.service_account_email and
# local.network_tag below, the same strings that module makes), so this root is planned and
# applied without waiting for that module. The pipeline's tpu-identity step makes the account
# itself first, and mig-apply waits for it; the roles and firewall rules come with tpu-apply,
# which the slice's first step after its apply waits for (docs/pipeline.md, "The slice first").

# filestore's and shared_pd's state: data.terraform_remote_state.* in remote_state_mounts.tf
# (linked from modules/_shared; read when they are there: the slice is asked for beside them, and
# its hosts get the NFS export and the disk later: local.nfs, the mig-attach step; a calendar
# slice's template carries the disk, and its apply waits for shared_pd: builder/planning/plan.py).

# This module's own state, as the last apply left it (an empty state before the first: the GCS
# backend writes one at init): the slots it holds (`slices`, below) and, in a state written
# before the slots, what that state's single slice recorded.
data "terraform_remote_state" "mig" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/mig"
  }
  # an empty state (before the first apply) has none of these; a state of the modules before the
  # slots has a name but no slices, one before mig-attach no shared_pd_kept_in_template either; a
  # state holds no null output (a single-host slice's workload_policy)
  defaults = {
    name                       = ""
    shared_pd_kept_in_template = "absent"
    slices                     = {}
    vm_count                   = 0
    workload_policy            = ""
  }
}

locals {
  # What modules/tpu_mig_access makes, derived the same way: the hosts' account
  # (google_service_account's email for a user-made account_id) and their tag (its local.tag).
  service_account_email = "${var.service_account_id}@${var.project_id}.iam.gserviceaccount.com"
  network_tag           = var.name

  # the scheduled builds' calls (modules/_shared/outputs_scheduled.tf tells their jobs)
  ttl_call    = module.slice_ttl
  health_call = module.slice_health
  region      = join("-", slice(split("-", var.zone), 0, 2))
  # The shared PD shows up on every VM as /dev/disk/by-id/google-<device name>.
  pd_device = "shared-pd"
  # Calendar mode: a calendar-mode future reservation delivers reservation var.calendar.name at
  # var.calendar.start for var.calendar.days; the VMs are bound to it. Terraform makes the request
  # where google-beta knows the generation's vm_family, else the pipeline's mig-calendar step does.
  # One request, not one per slot: calendar mode is never make-before-break (the precondition on
  # the group), so the values always go to the running slot.
  calendar    = var.provisioning == "calendar" && var.calendar != null
  cal         = local.calendar ? var.calendar : { name = "", start = "", days = 0, chips = 0, vm_family = "" }
  calendar_tf = local.calendar && local.cal.vm_family != ""

  # the slot's own keys (its name, the NFS export: below) over what every slot's hosts share
  metadata = merge(local.metadata_common, {
    "tpubuild-nfs-ip"    = local.nfs.ip
    "tpubuild-nfs-share" = local.nfs.share
    "tpubuild-tpu-name"  = local.slice_name
  })
  metadata_common = {
    "enable-oslogin"                 = "TRUE"
    "block-project-ssh-keys"         = "TRUE"
    "enable-guest-attributes"        = "TRUE"
    "startup-script"                 = file("${path.module}/../../env_setup/scripts/startup.sh")
    "tpubuild-arch"                  = "mig"
    "tpubuild-env"                   = var.env_name
    "tpubuild-mount-point"           = var.mount_point
    "tpubuild-shared-pd-device"      = var.shared_pd_attach ? local.pd_device : ""
    "tpubuild-tpu-endpoints"         = ""
    "tpubuild-workspace"             = "gs://${var.state_bucket}/workspace/${var.env_name}"
    "tpubuild-setup-script"          = var.setup_script
    "tpubuild-accelerator-type"      = var.accelerator_type
    "tpubuild-topology"              = var.topology
    "tpubuild-vm-count"              = tostring(var.vm_count)
    "tpubuild-host-bounds"           = var.host_bounds
    "tpubuild-chips-per-host-bounds" = var.chips_per_host_bounds
  }
}

# ---- the slice, in one of two slots ----
# The slice (workload policy, instance template, MIG, flex-start resize request) is slot "a"
# (named var.name) or "b" (var.name-b), as modules/tpu_vm's. A change that replaces the slice
# (make_before_break = true; docs/pipeline.md, "Make-before-break") puts the new slice in the free
# slot beside the running one: this apply creates its policy, template and group, the pipeline
# moves the training onto it, and the next apply of the same values (release = true: mig-release)
# deletes the old slot. The slots the state holds come from this module's own outputs (the
# previous apply's `slices`); a kept slot renders from its stored spec only, never from the
# current values, so it stays exactly as it was applied.

locals {
  # what makes a new instance template or a new workload policy (builder.catalogue.module_parts
  # SLICE_TEMPLATE, labels and the flex-start run limit): a slot whose values differ is another
  # slice. shared_pd is what the values ask of the disk (none, attached by mig-attach, or in the
  # template); a template that keeps it from before mig-attach records that in its slot (pd_kept).
  wanted = {
    accelerator_type      = var.accelerator_type
    machine_type          = var.machine_type
    vm_count              = var.vm_count
    accelerator_topology  = var.accelerator_topology
    topology              = var.topology
    host_bounds           = var.host_bounds
    chips_per_host_bounds = var.chips_per_host_bounds
    image_project         = var.image_project
    image_family          = var.image_family
    boot_disk_size_gb     = var.boot_disk_size_gb
    boot_disk_type        = var.boot_disk_type
    external_ips          = var.external_ips
    network               = var.network
    subnetwork            = var.subnetwork
    shared_pd             = !var.shared_pd_attach ? "none" : (var.shared_pd_attached_later ? "attached-later" : "template")
    mount_point           = var.mount_point
    setup_script          = var.setup_script
    provisioning          = var.provisioning
    reservation           = var.reservation
    labels                = var.labels
    max_run_hours         = var.max_run_hours
    # The group's target size policy (docs/modules.md, "Google's rules for TPU MIGs"): BULK on
    # every multi-host slice (the API refuses a MIG with a TPU accelerator topology without it)
    # and on every flex-start one (flex-start VMs come all at once from a bulk group grown from
    # 0, never from a resize request, which the API refuses on a TPU MIG). The mode cannot change
    # on an existing group: a slot whose mode differs is another slice (a new group).
    target_size_mode = var.accelerator_topology != "" || var.provisioning == "flex-start" ? "BULK" : "INDIVIDUAL"
  }
  # A state written before the slots (a name, no slices): its slice moved to slot "a" (moved.tf)
  # and is taken to run today's values, so the first plan after the upgrade changes it in place or
  # not at all, never beside it. Its template keeps the shared PD if it held it (a state of the
  # modules before mig-attach has no mark: it did; shared_pd_kept_in_template, below).
  legacy      = length(data.terraform_remote_state.mig.outputs.slices) == 0 && data.terraform_remote_state.mig.outputs.name != ""
  legacy_kept = data.terraform_remote_state.mig.outputs.shared_pd_kept_in_template == "absent" || data.terraform_remote_state.mig.outputs.shared_pd_kept_in_template == true
  # A slot stored before target_size_mode was recorded holds a group made without a target size
  # policy (INDIVIDUAL, the API's default): so does a state written before the slots.
  # Its slot is rendered from today's values, but for the mode: kept beside a new bulk-mode group
  # (remode, below), it keeps its name, the export Filestore holds and the disk it was made with.
  stored = merge(data.terraform_remote_state.mig.outputs.slices, {
    for slot in ["a"] : slot => {
      wanted                = merge(local.wanted, { target_size_mode = "INDIVIDUAL" })
      pd_kept               = local.legacy_kept
      name                  = var.name
      metadata              = merge(local.metadata_common, local.state_nfs, { "tpubuild-tpu-name" = var.name })
      pd_source             = local.legacy_kept && var.shared_pd_attach ? try(data.terraform_remote_state.shared_pd[0].outputs.name, "") : ""
      service_account_email = local.service_account_email
      network_tag           = local.network_tag
      calendar_name         = local.cal.name
      wait_for_instances    = true
    } if local.legacy
  })
  previous = { for slot, spec in local.stored : slot => merge(spec, { wanted = merge({ target_size_mode = "INDIVIDUAL" }, spec.wanted) }) }
  # what such a state records of its slice's values (its size and workload policy): enough to
  # refuse a make-before-break change it cannot tell from the running slice (precondition below)
  legacy_policy = data.terraform_remote_state.mig.outputs.workload_policy == null ? "" : data.terraform_remote_state.mig.outputs.workload_policy
  legacy_same = !local.legacy || (data.terraform_remote_state.mig.outputs.vm_count == var.vm_count && (var.accelerator_topology == "" ?
  local.legacy_policy == "" : endswith(local.legacy_policy, "/${var.name}-${var.topology}")))
  # jsonencode: a stored map (labels) comes back as an object, which == never equals. The group's
  # mode is not compared: a running group made before bulk mode that holds the values keeps
  # running as it is (Google cannot change its mode, and nothing else about it changes).
  same = [for slot, spec in local.previous : slot if jsonencode(merge(spec.wanted, { target_size_mode = local.wanted.target_size_mode })) == jsonencode(local.wanted)]
  free = [for slot in ["a", "b"] : slot if !contains(keys(local.previous), slot)]
  # the running slots whose group has another target size mode than the values ask for, when the
  # values change (a new slice either way): Google cannot change the mode of an existing group, so
  # the values go to a new group in the free slot whether or not the user makes before breaking
  # (docs/modules.md, "What an existing environment gets"); breaking before making, the old group
  # goes in the same apply (the guard shows it)
  remode = [for slot, spec in local.previous : slot if spec.wanted.target_size_mode != local.wanted.target_size_mode]
  # the slot the values go to: the one already holding them; else, making before breaking or
  # changing the group's mode, a free one beside the running slice; else the running one
  # (replaced in place) or "a"
  target = length(local.same) > 0 ? local.same[0] : (
    (var.make_before_break || length(local.remode) > 0) && length(local.previous) == 1 ? local.free[0] : (
  length(local.previous) > 0 ? sort(keys(local.previous))[0] : "a"))
  # the slot's name: "a" is var.name, "b" var.name-b (the MIG, its VMs' prefix, the template's)
  slice_name = local.target == "a" ? var.name : "${var.name}-b"
  # the running slices kept beside a new one until it is whole and holds the training: every other
  # slot the state holds, until the release apply once the target is in the state
  # (release = true: the mig-release step, after the training moved; never the first apply)
  releasing = var.release && contains(keys(local.previous), local.target)
  kept = { for slot, spec in local.previous : slot => spec if slot != local.target && !local.releasing && (
  var.make_before_break || !contains(local.remode, slot)) }

  # The NFS export in the hosts' metadata, as modules/tpu_vm's: a slot the state holds keeps ""
  # (made before Filestore: its hosts read the export from the workspace at every boot, which
  # filestore-publish writes), so nothing of a running slice changes (a new template would
  # recreate every VM); an export follows Filestore's state as before; a slice not in the state
  # (a slot of a state written before the slots included) takes Filestore's export when its state
  # holds one, else "".
  stored_nfs = { for key in ["tpubuild-nfs-ip", "tpubuild-nfs-share"] : key => try(local.previous[local.target].metadata[key], null) }
  state_nfs  = { "tpubuild-nfs-ip" = data.terraform_remote_state.filestore.outputs.nfs_ip, "tpubuild-nfs-share" = data.terraform_remote_state.filestore.outputs.share_name }
  nfs_meta = { for key, stored in local.stored_nfs : key => (
    local.stored_nfs["tpubuild-nfs-ip"] == "" ? "" : (local.state_nfs[key] != "" ? local.state_nfs[key] : (stored == null ? "" : stored))
  ) }
  nfs = { ip = local.nfs_meta["tpubuild-nfs-ip"], share = local.nfs_meta["tpubuild-nfs-share"] }

  # Whether the target's template carries the shared PD. Not when the pipeline's mig-attach step
  # attaches it (var.shared_pd_attached_later): the VMs are made beside shared_pd-seed and get the
  # disk once it is seeded, as a VM holding it would keep the seeder from writing it. A slice
  # applied by the modules before mig-attach has the disk in its template and keeps it there
  # (pd_kept, stored in its slot), because a template without it is a new template, and a new
  # template recreates every VM of the running slice (update_policy below). Kept only while the
  # slot holds the same values: a slot whose values change gets a new template anyway (its VMs are
  # recreated either way, in place or, make-before-break, as slot b), so that template is made as
  # the values say, and so is a new slot's: the kept disk saves nothing there and mig-attach
  # attaches it as on any slice.
  pd_kept        = var.shared_pd_attach && contains(local.same, local.target) && try(local.previous[local.target].pd_kept, false)
  pd_in_template = var.shared_pd_attach && (!var.shared_pd_attached_later || local.pd_kept)

  # The boot script of the running slot. A slot that holds the same values keeps the boot script
  # (startup-script, env_setup/scripts/startup.sh) it was made with, stored in its slot's
  # metadata: a tpubuild upgrade changes startup.sh, and a template whose metadata changes is a
  # new template, which recreates every VM of the running slice (update_policy below) and kills
  # its training. Every other key of the metadata is made from the slot's values (wanted, its
  # name, the environment's), which a slot holding the same values keeps anyway, and the NFS
  # export, as above. A new slot, or one whose values change (its VMs are recreated either way),
  # takes today's script; so does a slot stored before its metadata was (a state of the modules
  # before the slots). docs/pipeline.md, "What a running slice keeps".
  kept_script   = contains(local.same, local.target) ? try(local.previous[local.target].metadata["startup-script"], null) : null
  slot_metadata = merge(local.metadata, local.kept_script == null ? {} : { "startup-script" = local.kept_script })

  # the slice values.env asks for, in its slot: everything its resources read, so that the next
  # apply, which may keep it beside a new one, renders it from here
  slot = {
    name = local.slice_name
    # the running group's mode where it holds the values (above), else the values' mode
    wanted   = merge(local.wanted, contains(local.same, local.target) ? { target_size_mode = local.previous[local.target].wanted.target_size_mode } : {})
    metadata = local.slot_metadata
    pd_kept  = local.pd_kept
    # the shared PD the template carries (empty: none)
    pd_source             = local.pd_in_template ? data.terraform_remote_state.shared_pd[0].outputs.name : ""
    service_account_email = local.service_account_email
    network_tag           = local.network_tag
    calendar_name         = local.cal.name
    # whether the group's apply waits for its VMs, as the slot was made (var.wait_for_instances):
    # a slot the state holds keeps it (true, made before the variable), so no plan flips it
    wait_for_instances = contains(keys(local.previous), local.target) ? try(local.previous[local.target].wait_for_instances, true) : var.wait_for_instances
  }
  slices = merge(local.kept, { (local.target) = local.slot })

  # how each slot gets its capacity (from its own values)
  mode = { for slot, spec in local.slices : slot => {
    spot     = spec.wanted.provisioning == "spot"
    reserved = spec.wanted.provisioning == "reservation"
    # Flex-start (Dynamic Workload Scheduler): the VMs come all at once when the bulk group is
    # grown from 0 (mig-resize), run at most max_run_hours and are then deleted (docs/capacity.md).
    flex = spec.wanted.provisioning == "flex-start"
    # calendar: bound to the reservation the calendar request delivers
    calendar = spec.wanted.provisioning == "calendar" && spec.calendar_name != ""
    bulk     = spec.wanted.target_size_mode == "BULK"
    # a named reservation consumed by a bulk group the way Google's TPU pages do: specific
    # affinity and the reservation-bound model (bulk mode supports it; none named: any matching
    # reservation, standard VMs; a single-host group keeps standard VMs with specific affinity)
    bound = spec.wanted.provisioning == "reservation" && spec.wanted.reservation != "" && spec.wanted.target_size_mode == "BULK"
    # Spot VMs of a bulk group stop on preemption (Google's TPU Spot page), and the slice is
    # restarted through 0; those of a single-host group are deleted and the group recreates them
    # (a stopped VM would hold its place without running). A group made before bulk mode keeps
    # deleting them: its template is not changed under its running VMs.
    spot_stop = spec.wanted.provisioning == "spot" && spec.wanted.target_size_mode == "BULK"
  } }
}

# ---- the slice's shape: one workload policy per slot and topology (multi-host slices only) ----

# Slot a's policy keeps the address it had before the slots (slice[0]) and slot b's is slice_b[0]:
# a state applied with provider 6.x holds slot a's policy under the google provider, and Terraform
# cannot move a resource whose provider changes (google-beta implements no cross-provider move),
# so no `moved` block may name it. Both read local.policies; only the slot key differs.
resource "google_compute_resource_policy" "slice" {
  provider = google-beta
  count    = contains(keys(local.policies), "a") ? 1 : 0
  name     = local.policies["a"].name
  region   = local.region

  description = local.policies["a"].description

  workload_policy {
    type                 = "HIGH_THROUGHPUT"
    accelerator_topology = local.policies["a"].accelerator_topology
    # The ICI links are set up when the VMs are created, as a training slice needs (the API's
    # default); PROVISION_ONLY leaves them to a scheduler that connects chips later.
    accelerator_topology_mode = "AUTO_CONNECT"
  }

  lifecycle {
    create_before_destroy = true
    # A policy made before this field was set holds it empty; the field forces a new policy, and a
    # new policy drains the slice: leave those alone (they are AUTO_CONNECT, the API's default).
    ignore_changes = [workload_policy[0].accelerator_topology_mode]
  }
}

resource "google_compute_resource_policy" "slice_b" {
  provider = google-beta
  count    = contains(keys(local.policies), "b") ? 1 : 0
  name     = local.policies["b"].name
  region   = local.region

  description = local.policies["b"].description

  workload_policy {
    type                      = "HIGH_THROUGHPUT"
    accelerator_topology      = local.policies["b"].accelerator_topology
    accelerator_topology_mode = "AUTO_CONNECT"
  }

  lifecycle {
    create_before_destroy = true
  }
}

locals {
  # One policy per slot with a topology (multi-host); a new topology is a new policy (the old one
  # is deleted once its MIG points at the new one); "4x4" is a legal name part ([a-z0-9-]).
  policies = { for slot, spec in local.slices : slot => {
    name                 = "${spec.name}-${spec.wanted.topology}"
    description          = "tpubuild ${var.env_name}: ${spec.wanted.accelerator_type} as ${spec.wanted.vm_count} ICI-connected TPU VMs"
    accelerator_topology = spec.wanted.accelerator_topology
  } if spec.wanted.accelerator_topology != "" }
  policy_links = merge({ for p in google_compute_resource_policy.slice : "a" => p.self_link },
  { for p in google_compute_resource_policy.slice_b : "b" => p.self_link })
}

# ---- the hosts ----

resource "google_compute_instance_template" "slice" {
  #checkov:skip=CKV_GCP_40:access_config is rendered only when the slot's external_ips, var.external_ips (TPU_EXTERNAL_IPS) when written, is true; it defaults to false and tests/terraform/test_security.py proves no external IP by default.
  #checkov:skip=CKV_GCP_32:metadata is the slot's stored metadata, local.metadata when written, which sets block-project-ssh-keys = TRUE; tests/terraform/test_security_identity.py proves it.
  #checkov:skip=CKV_GCP_39:TPU VMs boot Google's accelerator OS images (ubuntu-os-accelerator-images), whose TPU driver (vfio) Google documents with --no-shielded-secure-boot; vTPM and integrity monitoring stay on.
  for_each       = local.slices
  name_prefix    = "${each.value.name}-"
  description    = "tpubuild ${var.env_name}: one TPU VM (${each.value.wanted.machine_type}) of ${each.value.wanted.accelerator_type}"
  machine_type   = each.value.wanted.machine_type
  labels         = each.value.wanted.labels
  tags           = [each.value.network_tag]
  can_ip_forward = false
  metadata       = each.value.metadata

  # type and mode are set, not left to the provider: since provider 7.0 it no longer fills in a
  # template disk's type, mode or interface (the API does). These are the values a 6.x-applied
  # template holds, so the first 8.x plan is a no-op; interface stays the API's (NVMe for the
  # Hyperdisk boot disks of v6e and TPU7x).
  disk {
    boot         = true
    type         = "PERSISTENT"
    mode         = "READ_WRITE"
    auto_delete  = true
    source_image = "projects/${each.value.wanted.image_project}/global/images/family/${each.value.wanted.image_family}"
    disk_size_gb = each.value.wanted.boot_disk_size_gb
    disk_type    = each.value.wanted.boot_disk_type
    labels       = each.value.wanted.labels
  }

  # the shared PD, read-only, where the pipeline does not attach it after the seed (pd_in_template)
  dynamic "disk" {
    for_each = compact([each.value.pd_source])
    content {
      boot        = false
      type        = "PERSISTENT"
      auto_delete = false
      source      = disk.value
      mode        = "READ_ONLY"
      device_name = local.pd_device
    }
  }

  network_interface {
    network    = each.value.wanted.network
    subnetwork = each.value.wanted.subnetwork == "" ? null : each.value.wanted.subnetwork

    dynamic "access_config" {
      for_each = each.value.wanted.external_ips ? [true] : []
      content {
        network_tier = "PREMIUM"
      }
    }
  }

  service_account {
    email  = each.value.service_account_email
    scopes = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot          = false
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }

  # TPU VMs cannot live-migrate: maintenance stops them. Spot VMs of a bulk group stop on
  # preemption, as Google's TPU Spot page creates them (--instance-termination-action=STOP); such a
  # slice is restarted by deleting its VMs and growing the group again from 0 (mig-resize, the
  # health check); a single-host group's are deleted and recreated by the group. Calendar-mode VMs
  # and those of a named reservation are RESERVATION_BOUND: they run only on their reservation and
  # are deleted when it ends; flex-start VMs are deleted at their run limit.
  scheduling {
    on_host_maintenance         = "TERMINATE"
    automatic_restart           = !(local.mode[each.key].spot || local.mode[each.key].flex || local.mode[each.key].calendar || local.mode[each.key].bound)
    preemptible                 = local.mode[each.key].spot
    provisioning_model          = local.mode[each.key].spot ? "SPOT" : (local.mode[each.key].flex ? "FLEX_START" : (local.mode[each.key].calendar || local.mode[each.key].bound ? "RESERVATION_BOUND" : "STANDARD"))
    instance_termination_action = local.mode[each.key].spot_stop ? "STOP" : (local.mode[each.key].spot || local.mode[each.key].flex || local.mode[each.key].calendar || local.mode[each.key].bound ? "DELETE" : null)

    # Flex-start VMs run at most TPU_MAX_RUN_HOURS, then Compute Engine deletes them.
    dynamic "max_run_duration" {
      for_each = local.mode[each.key].flex ? [each.value.wanted.max_run_hours * 3600] : []
      content {
        seconds = max_run_duration.value
      }
    }
  }

  # TPU_PROVISIONING=reservation: a named reservation (TPU_RESERVATION) by specific affinity, the
  # VMs reservation-bound (Google's consume-reservation page for TPUs); none named: any matching
  # one in the zone, standard VMs (a reservation that requires specific targeting is not consumed
  # then, and the VMs are on-demand: docs/modules.md); calendar mode: the reservation its request
  # delivers (the slot's calendar_name).
  dynamic "reservation_affinity" {
    # Flex-start VMs must not consume a reservation (Google's flex-start template: NO_RESERVATION).
    for_each = local.mode[each.key].reserved || local.mode[each.key].flex || local.mode[each.key].calendar ? [true] : []
    content {
      type = local.mode[each.key].flex ? "NO_RESERVATION" : (local.mode[each.key].calendar || each.value.wanted.reservation != "" ? "SPECIFIC_RESERVATION" : "ANY_RESERVATION")

      dynamic "specific_reservation" {
        for_each = local.mode[each.key].flex ? [] : compact([local.mode[each.key].calendar ? each.value.calendar_name : each.value.wanted.reservation])
        content {
          key    = "compute.googleapis.com/reservation-name"
          values = [specific_reservation.value]
        }
      }
    }
  }

  lifecycle {
    create_before_destroy = true
    precondition {
      condition     = !local.pd_in_template || each.value.pd_source != "" || each.key != local.target
      error_message = "The slice's instance template carries the shared PD, but modules/shared_pd's state holds no disk: apply shared_pd first (the pipeline's mig-apply waits for it in calendar mode)."
    }
  }
}

resource "google_compute_instance_group_manager" "slice" {
  for_each           = local.slices
  name               = each.value.name
  base_instance_name = each.value.name
  zone               = var.zone
  description        = "tpubuild ${var.env_name}: the ${each.value.wanted.accelerator_type} slice (${each.value.wanted.vm_count} TPU VMs)"
  # Flex-start: the group starts empty and mig-resize grows it from 0 to the whole slice (a plain
  # resize: bulk mode creates every VM at once when Dynamic Workload Scheduler has the capacity).
  target_size = local.mode[each.key].flex ? 0 : each.value.wanted.vm_count

  # BULK: every VM at once or none (multi-host and flex-start slices; local.wanted says why).
  dynamic "target_size_policy" {
    for_each = local.mode[each.key].bulk ? ["BULK"] : []
    content {
      mode = target_size_policy.value
    }
  }

  # Flex-start in bulk mode: Google requires repair off (defaultActionOnFailure DO_NOTHING); a VM
  # that fails stays failed, and the slice is recovered by growing the group again from 0.
  dynamic "instance_lifecycle_policy" {
    for_each = local.mode[each.key].flex && local.mode[each.key].bulk ? ["DO_NOTHING"] : []
    content {
      default_action_on_failure = instance_lifecycle_policy.value
    }
  }

  version {
    name              = "slice"
    instance_template = google_compute_instance_template.slice[each.key].self_link_unique
  }

  dynamic "resource_policies" {
    for_each = [for slot, link in local.policy_links : link if slot == each.key]
    content {
      workload_policy = resource_policies.value
    }
  }

  # A slice is all its VMs or nothing: a template change recreates every VM at once (a partial
  # set of ICI peers cannot train), never one by one.
  update_policy {
    type                           = "PROACTIVE"
    minimal_action                 = "REPLACE"
    most_disruptive_allowed_action = "REPLACE"
    replacement_method             = "RECREATE"
    max_surge_fixed                = 0
    max_unavailable_fixed          = each.value.wanted.vm_count
  }

  # Flex-start and calendar VMs come when Google has the capacity (mig-resize grows the flex-start
  # group from 0, the reservation is delivered at its start): the apply does not wait; mig-resize does. Otherwise
  # the create waits until the group is whole: make-before-break's wait for the new slice; unless
  # the slot was made by a failover (var.wait_for_instances = false): the acquisition step waits
  # and reads the group's errors, as a stockout only shows there.
  wait_for_instances        = try(each.value.wait_for_instances, true) && !(local.mode[each.key].flex || local.mode[each.key].calendar)
  wait_for_instances_status = "STABLE"

  timeouts {
    create = "60m"
    update = "60m"
  }

  lifecycle {
    # The pipeline's mig-resize step sets the size after the apply (and mig-drain sets 0 before
    # a topology change), so Terraform creates the group at full size and then leaves it alone.
    ignore_changes = [target_size]
    precondition {
      condition     = length(local.previous) < 2 || length(local.same) > 0
      error_message = "Two slices run (a replacement did not finish) and values.env asks for neither: set the slice's values back to those of one of them and update (the other is deleted), then change them."
    }
    precondition {
      condition     = !var.make_before_break || local.legacy_same
      error_message = "This mig state was written before make-before-break, so the running slice's values are unknown: apply the values it runs with once (tpubuild update), then change the slice; or set TPU_REPLACE=\"break-before-make\"."
    }
    precondition {
      condition     = !(var.make_before_break && var.provisioning == "calendar")
      error_message = "A calendar-mode slice is never made before break (its VMs run only on the one reservation): set make_before_break to false."
    }
  }
}

# ---- calendar mode: one calendar-mode future reservation for the whole slice ----
# Google cannot cancel, delete or change a submitted calendar request: a destroy forgets it
# (deletion_policy ABANDON; the guard announces it) and the reservation ends at its end time,
# billed until then. Its reservation is named var.calendar.name (the request's own name), only
# VMs that name it consume it (specific_reservation_required), and it is deleted at the end.

resource "google_compute_future_reservation" "slice" {
  provider    = google-beta
  count       = local.calendar_tf ? 1 : 0
  name        = local.cal.name
  zone        = var.zone
  description = "tpubuild ${var.env_name}: ${local.cal.chips} chips of ${var.accelerator_type} for ${local.cal.days} days"

  reservation_mode                      = "CALENDAR"
  planning_status                       = "SUBMITTED"
  deployment_type                       = "DENSE"
  reservation_name                      = local.cal.name
  specific_reservation_required         = true
  auto_delete_auto_created_reservations = true
  deletion_policy                       = "ABANDON"

  time_window {
    start_time = local.cal.start
    duration {
      seconds = tostring(local.cal.days * 86400)
    }
  }

  aggregate_reservation {
    vm_family     = local.cal.vm_family
    workload_type = "BATCH"
    reserved_resources {
      accelerator {
        # the chips only, as gcloud's --tpu-version/--chip-count request them
        accelerator_count = local.cal.chips
      }
    }
  }
}

# ---- the environment's TTL (ENV_TTL_HOURS; modules/ttl): created and destroyed with the slice ----
# Its build destroys with _MIG=true (builder/inputs/ttl.py SCOPE): this module, not the hosts' account
# and firewall (modules/tpu_mig_access), Filestore or the shared PD.

module "slice_ttl" {
  source = "../ttl"
  count  = var.ttl_hours > 0 ? 1 : 0

  project_id     = var.project_id
  region         = join("-", slice(split("-", var.zone), 0, 2))
  env_name       = var.env_name
  ttl_hours      = var.ttl_hours
  ttl_build_body = var.ttl_build_body
  # the slot values.env asks for (the TTL's job names the slice it was made for)
  tpu_id = google_compute_instance_group_manager.slice[local.target].id
}

# ---- the health check (TPU_RECOVERY; modules/health): created and destroyed with the slice ----
# The MIG recreates lost VMs itself; the health build relaunches training once the slice is whole.

module "slice_health" {
  source = "../health"
  count  = var.health_build_body != "" ? 1 : 0

  project_id        = var.project_id
  region            = join("-", slice(split("-", var.zone), 0, 2))
  env_name          = var.env_name
  health_build_body = var.health_build_body
  health_schedule   = var.health_schedule
}
