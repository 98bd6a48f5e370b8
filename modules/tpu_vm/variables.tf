variable "name" {
  description = "Name of the TPU VM slice, of its network tag and firewall rules (tpu-<ENV_BUILD_NAME>)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,45}[a-z0-9])?$", var.name))
    error_message = "name must be 1-47 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "accelerator_type" {
  description = "TPU VM accelerator type, v2 through v6e (e.g. v4-32, v5litepod-16, v6e-8)."
  type        = string

  validation {
    condition     = can(regex("^(v2|v3|v4|v5litepod|v5p|v6e)-[0-9]+$", var.accelerator_type))
    error_message = "accelerator_type must look like v4-32, v5p-8, v5litepod-16 or v6e-8."
  }
}

variable "runtime_version" {
  description = "TPU VM software version (tpu-ubuntu2204-base, v2-alpha-tpuv5-lite, v2-alpha-tpuv5, v2-alpha-tpuv6e)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9.]*[a-z0-9]$", var.runtime_version)) && !startswith(var.runtime_version, "pytorch-")
    error_message = "runtime_version must be a TPU VM runtime such as tpu-ubuntu2204-base; pytorch-* runtimes are TPU Node runtimes (modules/tpu_node)."
  }
}

variable "preemptible" {
  description = "Create a preemptible TPU VM (TPU_PROVISIONING=preemptible, or legacy TPU_PREEMPTIBLE; v2-v4 only)."
  type        = bool
}

variable "spot" {
  description = "Create a Spot TPU VM (TPU_PROVISIONING=spot, or legacy TPU_SPOT)."
  type        = bool
}

variable "reserved" {
  description = "Use the project's matching TPU reservation (TPU_PROVISIONING=reservation, or legacy TPU_RESERVED)."
  type        = bool
}

variable "queued" {
  description = "Request the slice as a queued resource (TPU_QUEUED): Terraform then creates only the hosts' identity and firewall, and the pipeline's tpu-queue step requests the slice with gcloud from the queued_request output."
  type        = bool
  default     = false
}

variable "make_before_break" {
  description = "TPU_REPLACE=make-before-break: a change that replaces the slice creates the new slice in the free slot (name-b or name) beside the running one; false (break-before-make) replaces it in place."
  type        = bool
  default     = false
}

variable "release" {
  description = "Delete the slices kept beside the one values.env asks for once that one is in the state (the pipeline's tpu-release step, after tpu-swap moved the training); false on every other apply, which never deletes a running slice."
  type        = bool
  default     = false
}

variable "previous_zone" {
  description = "The zone the slices this state holds were made in when the state does not record it (written before the slots recorded their zone): the applied snapshot's granted zone, which a move to another zone passes; empty: zone (nothing moves)."
  type        = string
  default     = ""

  validation {
    condition     = var.previous_zone == "" || can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", var.previous_zone))
    error_message = "previous_zone must be empty or a zone name (us-central2-b)."
  }
}
