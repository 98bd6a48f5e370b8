variable "project_id" {
  description = "Google Cloud project that holds the environment."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "zone" {
  description = "Zone of the environment (ZONE)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", var.zone))
    error_message = "zone must look like europe-west4-a."
  }
}

variable "env_name" {
  description = "ENV_BUILD_NAME: names the remote-state prefixes (<env_name>/<module>) and the workspace."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,22}[a-z0-9])?$", var.env_name))
    error_message = "env_name must be 1-24 lowercase letters, digits or hyphens, not starting or ending with a hyphen."
  }
}

variable "state_bucket" {
  description = "The environment's Terraform state bucket: the other modules' state and the workspace/<env_name>/ objects are read from it."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$", var.state_bucket))
    error_message = "state_bucket must be a bucket name (3-63 lowercase letters, digits, -, _ or .)."
  }
}

variable "service_account_id" {
  description = "account_id of the workers' dedicated service account (6-30 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.service_account_id))
    error_message = "service_account_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "network" {
  description = "VPC network of the workers (name, e.g. default); the firewall rules are created in it."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.network))
    error_message = "network must be a network name such as default."
  }
}

variable "subnetwork" {
  description = "Subnetwork of the workers; empty uses the network's subnet in the region (auto-mode networks)."
  type        = string

  validation {
    condition     = var.subnetwork == "" || can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.subnetwork))
    error_message = "subnetwork must be empty or a subnetwork name."
  }
}

variable "shared_pd_attach" {
  description = "Attach the shared dataset disk (modules/shared_pd) READ_ONLY (SHARED_PD_DISK_ATTACH)."
  type        = bool
}

variable "mount_point" {
  description = "Where startup.sh mounts nfs_share/ and shared_pd/ (MOUNT_POINT)."
  type        = string

  validation {
    condition     = can(regex("^/[^[:space:]]*$", var.mount_point)) && var.mount_point != "/"
    error_message = "mount_point must be an absolute path other than /, without spaces."
  }
}

variable "dataset_bucket" {
  description = "Bucket of GCS_DATASET; the workers get roles/storage.objectViewer on it. Empty: no dataset bucket, no grant."
  type        = string

  validation {
    condition     = var.dataset_bucket == "" || can(regex("^[a-z0-9][-a-z0-9_.]{1,221}[a-z0-9]$", var.dataset_bucket))
    error_message = "dataset_bucket must be empty or a bucket name (no gs:// and no path)."
  }
}

variable "setup_script" {
  description = "MIG_SETUP_SCRIPT: repo-relative path, inside the workspace, of a script startup.sh runs after the mounts; empty for none."
  type        = string

  validation {
    condition     = var.setup_script == "" || (!startswith(var.setup_script, "/") && !contains(split("/", var.setup_script), ".."))
    error_message = "setup_script must be empty or a relative path without '..'."
  }
}

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

variable "labels" {
  description = "Labels put on the instance template, its VMs and their boot disks (tpubuild-env, managed-by)."
  type        = map(string)

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "label keys must start with a lowercase letter; keys and values hold lowercase letters, digits, _ and - (at most 63)."
  }
}
