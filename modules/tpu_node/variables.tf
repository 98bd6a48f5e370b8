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
  description = "Name of the TPU Node (tpu-<ENV_BUILD_NAME>)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.name))
    error_message = "name must be 1-63 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "accelerator_type" {
  description = "TPU Node accelerator type: v2-* or v3-* (TPU_ACCELERATOR_TYPE)."
  type        = string

  validation {
    condition     = can(regex("^v[23]-[0-9]+$", var.accelerator_type))
    error_message = "accelerator_type must be a v2 or v3 type such as v3-32; other generations need the vm architecture."
  }
}

variable "runtime_version" {
  description = "TPU Node runtime (the API's tensorflow_version), e.g. pytorch-1.13 or pytorch-nightly."
  type        = string

  validation {
    condition     = can(regex("^pytorch-(nightly|[0-9]+[.][0-9]+)$", var.runtime_version))
    error_message = "runtime_version must be pytorch-<major>.<minor> or pytorch-nightly."
  }
}

variable "cidr_block" {
  description = "A private /29 for the TPU workers (TPU_CIDR_BLOCK); empty lets service networking pick one."
  type        = string

  validation {
    condition     = var.cidr_block == "" || (can(cidrnetmask(var.cidr_block)) && endswith(var.cidr_block, "/29"))
    error_message = "cidr_block must be empty or an IPv4 /29 such as 10.3.0.0/29."
  }
}

variable "network" {
  description = "VPC network the TPU is peered with (name, e.g. default)."
  type        = string

  validation {
    condition     = length(var.network) > 0
    error_message = "network must not be empty."
  }
}

variable "preemptible" {
  description = "Create a preemptible TPU (TPU_PREEMPTIBLE)."
  type        = bool
}

variable "labels" {
  description = "Labels put on the TPU (tpubuild-env, managed-by)."
  type        = map(string)

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "label keys must start with a lowercase letter; keys and values hold lowercase letters, digits, _ and - (at most 63)."
  }
}
