variable "name" {
  description = "Name of the Filestore instance (nfs-<ENV_BUILD_NAME>)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.name))
    error_message = "name must be 1-63 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "tier" {
  description = "Filestore service tier."
  type        = string

  validation {
    condition     = contains(["BASIC_HDD", "BASIC_SSD", "ZONAL", "REGIONAL", "ENTERPRISE", "HIGH_SCALE_SSD"], var.tier)
    error_message = "tier must be one of BASIC_HDD, BASIC_SSD, ZONAL, REGIONAL, ENTERPRISE, HIGH_SCALE_SSD."
  }
}

variable "share_name" {
  description = "Name of the NFS file share (SHARED_FS); the export path is /<share_name>."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9_]{0,31}$", var.share_name))
    error_message = "share_name must start with a lowercase letter and hold only lowercase letters, digits and _ (at most 32)."
  }
}

variable "capacity_gb" {
  description = "Capacity of the file share in GiB (tier minimums: 1024 BASIC_HDD, 2560 BASIC_SSD, 10240 HIGH_SCALE_SSD)."
  type        = number

  validation {
    condition     = var.capacity_gb >= 1024 && floor(var.capacity_gb) == var.capacity_gb
    error_message = "capacity_gb must be a whole number of GiB, at least 1024."
  }
}

variable "move" {
  description = "TPU_MOVE: a change of location (the environment moves to another zone) creates the new instance in the free slot beside the running one, restored from source_backup; false replaces it in place (which the pipeline's guard refuses without _ALLOW_DATA_LOSS)."
  type        = bool
  default     = false
}

variable "release" {
  description = "Delete the instance kept in the old location once the one values.env asks for is in the state (the pipeline's filestore-release step, at the end of a move); false on every other apply, which never deletes a running instance."
  type        = bool
  default     = false
}

variable "source_backup" {
  description = "The Filestore backup a new instance of a move is restored from (projects/P/locations/REGION/backups/NAME: the pipeline's filestore-backup step takes it of the running share); read only when the instance is created; empty: a blank share."
  type        = string
  default     = ""

  validation {
    condition     = var.source_backup == "" || can(regex("^projects/[^/]+/locations/[a-z]+-[a-z]+[0-9]+/backups/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.source_backup))
    error_message = "source_backup must be empty or projects/PROJECT/locations/REGION/backups/NAME (a backup is regional)."
  }
}
