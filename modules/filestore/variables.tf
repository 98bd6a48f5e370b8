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
