variable "boot_disk_size_gb" {
  description = "Boot disk size of the slice's VMs in GB (BOOT_DISK_SIZE_GB)."
  type        = number

  validation {
    condition     = var.boot_disk_size_gb >= 10 && floor(var.boot_disk_size_gb) == var.boot_disk_size_gb
    error_message = "boot_disk_size_gb must be a whole number, at least 10."
  }
}

variable "boot_disk_type" {
  description = "Boot disk type of the slice's VMs: pd-balanced on ct5p, hyperdisk-balanced on ct6e and tpu7x, which take only Hyperdisk (the generation record's mig boot_disk_type, builder/data/tpu_offers.json)."
  type        = string

  validation {
    condition     = contains(["pd-balanced", "hyperdisk-balanced"], var.boot_disk_type)
    error_message = "boot_disk_type must be pd-balanced or hyperdisk-balanced."
  }
}

variable "accelerator_type" {
  description = "The slice's accelerator type (TPU_ACCELERATOR_TYPE), e.g. v6e-16; recorded in metadata for PJRT (TPU_ACCELERATOR_TYPE)."
  type        = string

  validation {
    condition     = can(regex("^(v5p|v6e|tpu7x)-[0-9]+$", var.accelerator_type))
    error_message = "accelerator_type must be a v5p, v6e or tpu7x slice such as v5p-8."
  }
}

variable "machine_type" {
  description = "TPU machine type of every VM (the generation record's mig machine types, builder/data/tpu_offers.json): ct5p-hightpu-4t, ct6e-standard-1t/4t/8t or tpu7x-standard-4t."
  type        = string

  validation {
    condition     = contains(["ct5p-hightpu-4t", "ct6e-standard-1t", "ct6e-standard-4t", "ct6e-standard-8t", "tpu7x-standard-4t"], var.machine_type)
    error_message = "machine_type must be one of ct5p-hightpu-4t, ct6e-standard-1t, ct6e-standard-4t, ct6e-standard-8t, tpu7x-standard-4t."
  }
}

variable "vm_count" {
  description = "TPU VMs in the slice (chips / chips per VM): the MIG's size."
  type        = number

  validation {
    condition     = var.vm_count >= 1 && floor(var.vm_count) == var.vm_count
    error_message = "vm_count must be a whole number, at least 1."
  }
}

variable "topology" {
  description = "The slice's chip grid, e.g. 4x4 (v6e-16) or 2x2x2 (v5p-16); part of the workload policy's name."
  type        = string

  validation {
    condition     = can(regex("^[0-9]+x[0-9]+(x[0-9]+)?$", var.topology))
    error_message = "topology must look like 4x4 or 2x2x2."
  }
}

variable "accelerator_topology" {
  description = "accelerator_topology of the workload policy (the topology for a multi-host slice); empty for a single-host slice, which gets no policy."
  type        = string

  validation {
    condition     = var.accelerator_topology == "" || can(regex("^[0-9]+x[0-9]+(x[0-9]+)?$", var.accelerator_topology))
    error_message = "accelerator_topology must be empty or look like 4x4 or 2x2x2."
  }
}

variable "host_bounds" {
  description = "The grid of VMs, x,y,z (PJRT TPU_HOST_BOUNDS), e.g. 2,2,1 for v6e-16."
  type        = string

  validation {
    condition     = can(regex("^[0-9]+,[0-9]+,[0-9]+$", var.host_bounds))
    error_message = "host_bounds must look like 2,2,1."
  }
}

variable "chips_per_host_bounds" {
  description = "The grid of chips on one VM, x,y,z (PJRT TPU_CHIPS_PER_HOST_BOUNDS), e.g. 2,2,1."
  type        = string

  validation {
    condition     = can(regex("^[0-9]+,[0-9]+,[0-9]+$", var.chips_per_host_bounds))
    error_message = "chips_per_host_bounds must look like 2,2,1."
  }
}

variable "image_project" {
  description = "Project of the accelerator OS image (ubuntu-os-accelerator-images)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9.:-]{4,61}[a-z0-9]$", var.image_project))
    error_message = "image_project must be a project ID such as ubuntu-os-accelerator-images."
  }
}

variable "image_family" {
  description = "Image family of the accelerator OS image for the generation, e.g. ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.image_family))
    error_message = "image_family must be an image family name."
  }
}

variable "provisioning" {
  description = "How the VMs get capacity: on-demand, spot (a multi-host slice's VMs stop on preemption and the slice restarts through target size 0; a single host is deleted and recreated by the MIG), reservation (a named one by specific affinity, reservation-bound in a bulk group; none named: any matching one), flex-start (a bulk group grown from 0 with repair off; deleted after max_run_hours) or calendar (a calendar-mode future reservation, consumed by name)."
  type        = string

  validation {
    condition     = contains(["on-demand", "spot", "reservation", "flex-start", "calendar"], var.provisioning)
    error_message = "provisioning must be on-demand, spot, reservation, flex-start or calendar."
  }
}

variable "calendar" {
  description = "With provisioning = calendar, the calendar-mode request (else null): name (of the request and of the reservation it delivers, which the VMs consume: builder.config.offers.calendar_name, <name>-cal), start (TPU_CALENDAR_START, RFC 3339 UTC), days (TPU_CALENDAR_DAYS, 1 to 90), chips (the slice's) and vm_family (the aggregate reservation's where google-beta's google_compute_future_reservation accepts the generation, CT5P or CT6E; empty: the pipeline's mig-calendar step requests it with gcloud, TPU7x)."
  type = object({
    name      = string
    start     = string
    days      = number
    chips     = number
    vm_family = string
  })
  default = null

  validation {
    condition = var.calendar == null ? true : (
      can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.calendar.name))
      && can(regex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$", var.calendar.start))
      && var.calendar.days >= 1 && var.calendar.days <= 90 && floor(var.calendar.days) == var.calendar.days
      && var.calendar.chips >= 1 && floor(var.calendar.chips) == var.calendar.chips
      && contains(["", "VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P", "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E"], var.calendar.vm_family)
    )
    error_message = "calendar must be null or name a reservation, start at an RFC 3339 UTC time, last 1 to 90 days, reserve a whole number of chips and name a vm_family google-beta 8.7 accepts (CT5P, CT6E) or none."
  }
}

variable "max_run_hours" {
  description = "With provisioning = flex-start: how long the slice may run before Compute Engine deletes its VMs (TPU_MAX_RUN_HOURS), 1 to 168 hours (7 days)."
  type        = number
  default     = 168

  validation {
    condition     = var.max_run_hours >= 1 && var.max_run_hours <= 168 && floor(var.max_run_hours) == var.max_run_hours
    error_message = "max_run_hours must be a whole number of hours from 1 to 168 (7 days)."
  }
}

variable "reservation" {
  description = "Name of the reservation a reservation-bound slice consumes (TPU_RESERVATION); empty: any matching reservation in the zone. Only with provisioning = reservation."
  type        = string
  default     = ""

  validation {
    condition     = var.reservation == "" || can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.reservation))
    error_message = "reservation must be empty or a reservation name."
  }
}

variable "shared_pd_attached_later" {
  description = "With shared_pd_attach: the pipeline's mig-attach step attaches the shared PD to the running VMs once shared_pd-seed has filled it (and the health check to a VM the MIG recreates), so the instance template does not carry it (builder.catalogue.module_parts.mig_attaches_disk: every provisioning but calendar). false: the template carries it (READ_ONLY, device shared-pd). A template that carries it already keeps it (output shared_pd_kept_in_template)."
  type        = bool
  default     = false
}

variable "make_before_break" {
  description = "TPU_REPLACE=make-before-break: a change that makes a new template or workload policy creates the new slice (policy, template, MIG) in the free slot (name-b or name) beside the running one; false (break-before-make) replaces it in place. Never with provisioning = calendar."
  type        = bool
  default     = false
}

variable "release" {
  description = "Delete the slices kept beside the one values.env asks for once that one is in the state (the pipeline's mig-release step, after the training moved onto it); false on every other apply, which never deletes a running slice."
  type        = bool
  default     = false
}

variable "wait_for_instances" {
  description = "true: the apply waits until the group is whole (STABLE). false when the build fails over between candidates (ZONE / TPU_PROVISIONING lists): a stockout does not fail a MIG's create, the group keeps retrying, so the pipeline's acquisition step (mig-apply) waits for the group itself and reads its errors (docs/capacity.md, \"The failover loop\"). A slot keeps what it was made with (slices)."
  type        = bool
  default     = true
}
