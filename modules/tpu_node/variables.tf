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

variable "preemptible" {
  description = "Create a preemptible TPU (TPU_PREEMPTIBLE)."
  type        = bool
}
