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

variable "name" {
  description = "Name of the disk (pd-<ENV_BUILD_NAME>)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.name))
    error_message = "name must be 1-63 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "type" {
  description = "Disk type (SHARED_PD_DISK_TYPE); a disk attached read-only to many VMs must be pd-standard, pd-balanced or pd-ssd."
  type        = string

  validation {
    condition     = contains(["pd-standard", "pd-balanced", "pd-ssd"], var.type)
    error_message = "type must be pd-standard, pd-balanced or pd-ssd."
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

variable "env_name" {
  description = "ENV_BUILD_NAME: names the seeder's account and its workspace prefix (workspace/<env_name>/)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,22}[a-z0-9])?$", var.env_name))
    error_message = "env_name must be 1-24 lowercase letters, digits or hyphens, not starting or ending with a hyphen."
  }
}

variable "state_bucket" {
  description = "The environment's Terraform state bucket; the seeder may read its workspace/<env_name>/ objects and nothing else in it."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$", var.state_bucket))
    error_message = "state_bucket must be a bucket name (3-63 lowercase letters, digits, -, _ or .)."
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

variable "dataset_bucket" {
  description = "Bucket of GCS_DATASET; the seeder gets roles/storage.objectViewer on it. Empty: no dataset bucket, no grant."
  type        = string

  validation {
    condition     = var.dataset_bucket == "" || can(regex("^[a-z0-9][-a-z0-9_.]{1,221}[a-z0-9]$", var.dataset_bucket))
    error_message = "dataset_bucket must be empty or a bucket name (no gs:// and no path)."
  }
}

variable "labels" {
  description = "Labels put on the disk (tpubuild-env, managed-by)."
  type        = map(string)

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "label keys must start with a lowercase letter; keys and values hold lowercase letters, digits, _ and - (at most 63)."
  }
}
