variable "name" {
  description = "Name of the MIG, of its instances' prefix, of its network tag and firewall rules (worker-<ENV_BUILD_NAME>)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,44}[a-z0-9])?$", var.name))
    error_message = "name must be 1-46 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "target_size" {
  description = "Number of worker VMs: one per TPU host (v3-32: 4, v3-128: 16)."
  type        = number

  validation {
    condition     = var.target_size >= 1 && floor(var.target_size) == var.target_size
    error_message = "target_size must be a whole number, at least 1."
  }
}

variable "machine_type" {
  description = "Machine type of the workers (MACHINE_TYPE)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.machine_type))
    error_message = "machine_type must look like n1-standard-16."
  }
}

variable "source_image_family" {
  description = "Image family of the workers (SOURCE_IMAGE_FAMILY)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.source_image_family))
    error_message = "source_image_family must be an image family name such as torch-xla."
  }
}

variable "source_image_project" {
  description = "Project that publishes the image (SOURCE_IMAGE_PROJECT)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9.:-]{4,61}[a-z0-9]$", var.source_image_project))
    error_message = "source_image_project must be a project ID such as ml-images."
  }
}

variable "image_version" {
  description = "GCE_IMAGE_VERSION: YYYYMMDD picks the family's newest image whose name holds that date; empty follows the family's latest image."
  type        = string

  validation {
    condition     = var.image_version == "" || can(regex("^20[0-9]{6}$", var.image_version))
    error_message = "image_version must be empty or a date YYYYMMDD."
  }
}

variable "boot_disk_size_gb" {
  description = "Boot disk size of the workers in GB (BOOT_DISK_SIZE_GB)."
  type        = number

  validation {
    condition     = var.boot_disk_size_gb >= 10 && floor(var.boot_disk_size_gb) == var.boot_disk_size_gb
    error_message = "boot_disk_size_gb must be a whole number, at least 10."
  }
}

variable "external_ip" {
  description = "Give each worker an ephemeral external IP (MIG_EXTERNAL_IP). Off by default: workers then need Cloud NAT for the internet and Private Google Access for Google APIs."
  type        = bool
  default     = false
}
