variable "name" {
  description = "Name of the Cloud Scheduler job (tpubuild-<env>-ttl)."
  type        = string
  validation {
    condition     = can(regex("^[a-zA-Z0-9_-]{1,500}$", var.name))
    error_message = "A Cloud Scheduler job name is letters, digits, '-' and '_'."
  }
}

variable "invoker_account_id" {
  description = "account_id of the service account the job calls Cloud Build as (tb-<env>-tl)."
  type        = string
  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{4,28}[a-z0-9])$", var.invoker_account_id))
    error_message = "A service account id is 6-30 lowercase letters, digits and '-'."
  }
}

variable "ttl_hours" {
  description = "Hours from the TPU's creation until the job destroys it (ENV_TTL_HOURS)."
  type        = number
  validation {
    condition     = var.ttl_hours >= 1 && var.ttl_hours <= 8760 && floor(var.ttl_hours) == var.ttl_hours
    error_message = "ttl_hours is a whole number of hours from 1 to 8760."
  }
}

variable "build_body" {
  description = "JSON of the Build the job creates (builder/ttl.py renders it: destroy with _TPU=true)."
  type        = string
  validation {
    condition     = can(jsondecode(var.build_body))
    error_message = "build_body must be JSON."
  }
}

variable "tpu_id" {
  description = "ID of the TPU the TTL belongs to: a new TPU gets a new job."
  type        = string
  validation {
    condition     = length(var.tpu_id) > 0
    error_message = "tpu_id is the TPU's id."
  }
}
