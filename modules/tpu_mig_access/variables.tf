variable "project_id" {
  description = "Google Cloud project that holds the environment."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
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
  description = "The environment's Terraform state bucket: the hosts may read its workspace/<env_name>/ objects."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$", var.state_bucket))
    error_message = "state_bucket must be a bucket name (3-63 lowercase letters, digits, -, _ or .)."
  }
}

variable "service_account_id" {
  description = "account_id of the slice hosts' dedicated service account (6-30 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.service_account_id))
    error_message = "service_account_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "network" {
  description = "VPC network of the slice (name, e.g. default); the firewall rules are created in it."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.network))
    error_message = "network must be a network name such as default."
  }
}

variable "dataset_bucket" {
  description = "Bucket of GCS_DATASET; the hosts get roles/storage.objectViewer on it. Empty: no dataset bucket, no grant."
  type        = string

  validation {
    condition     = var.dataset_bucket == "" || can(regex("^[a-z0-9][-a-z0-9_.]{1,221}[a-z0-9]$", var.dataset_bucket))
    error_message = "dataset_bucket must be empty or a bucket name (no gs:// and no path)."
  }
}

variable "name" {
  description = "Name of the slice (tpu-<ENV_BUILD_NAME>): its network tag and the prefix of its firewall rules."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,44}[a-z0-9])?$", var.name))
    error_message = "name must be 1-46 lowercase letters, digits or hyphens, starting with a letter."
  }
}
