# Shared: every module that declares var.ttl_hours and var.ttl_build_body links this file (modules/_shared/README.md).

variable "ttl_hours" {
  description = "ENV_TTL_HOURS: hours after the TPU's creation when modules/ttl destroys it (0: no TTL)."
  type        = number
  default     = 0

  validation {
    condition     = var.ttl_hours >= 0 && var.ttl_hours <= 8760 && floor(var.ttl_hours) == var.ttl_hours
    error_message = "ttl_hours is a whole number of hours from 0 (no TTL) to 8760."
  }
}

variable "ttl_build_body" {
  description = "JSON of the destroy-scoped Build the TTL job creates (builder/inputs/ttl.py); empty without a TTL."
  type        = string
  default     = ""

  validation {
    condition     = var.ttl_build_body == "" || can(jsondecode(var.ttl_build_body))
    error_message = "ttl_build_body is empty or the JSON of a Cloud Build Build."
  }
}
