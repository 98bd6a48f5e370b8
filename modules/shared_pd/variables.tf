variable "name" {
  description = "Name of the disk (pd-<ENV_BUILD_NAME>)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.name))
    error_message = "name must be 1-63 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "type" {
  description = "Disk type (SHARED_PD_DISK_TYPE); a disk attached read-only to many VMs: pd-standard, pd-balanced or pd-ssd, or hyperdisk-ml (READ_ONLY_MANY) for hosts that attach only Hyperdisk."
  type        = string

  validation {
    condition     = contains(["pd-standard", "pd-balanced", "pd-ssd", "hyperdisk-ml"], var.type)
    error_message = "type must be pd-standard, pd-balanced, pd-ssd or hyperdisk-ml."
  }
}

variable "size_gb" {
  description = "Size of the disk in GB (SHARED_PD_DISK_SIZE). Growing it resizes in place; shrinking it would replace the disk."
  type        = number

  validation {
    condition     = var.size_gb >= 10 && var.size_gb <= 65536 && floor(var.size_gb) == var.size_gb
    error_message = "size_gb must be a whole number between 10 and 65536."
  }
}

variable "snapshot" {
  description = "Snapshot to create the disk from (name or self link); empty creates a blank disk. Only read when the disk is created."
  type        = string
  default     = ""

  validation {
    condition     = var.snapshot == "" || can(regex("^([a-z]([-a-z0-9]{0,61}[a-z0-9])?|(https://www.googleapis.com/compute/v1/)?projects/.+/global/snapshots/[a-z]([-a-z0-9]{0,61}[a-z0-9])?)$", var.snapshot))
    error_message = "snapshot must be empty, a snapshot name or a snapshot self link."
  }
}

variable "seeder_service_account_id" {
  description = "account_id of the seeder VM's dedicated service account (tb-<env_name>-sd, 6-30 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.seeder_service_account_id))
    error_message = "seeder_service_account_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "move" {
  description = "TPU_MOVE: a change of zone (the environment moves) creates the new zone's disk in the free slot beside the running one, from snapshot; false replaces it in place (which the pipeline's guard refuses without _ALLOW_DATA_LOSS)."
  type        = bool
  default     = false
}

variable "release" {
  description = "Delete the disk kept in the old zone once the one values.env asks for is in the state (the pipeline's shared_pd-release step, at the end of a move); false on every other apply."
  type        = bool
  default     = false
}
