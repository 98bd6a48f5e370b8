# Shared: every module that declares var.health_build_body and var.health_schedule links this file (modules/_shared/README.md).

variable "health_build_body" {
  description = "JSON of the health check's Build (builder/inputs/recovery.py; TPU_RECOVERY); empty: no health check."
  type        = string
  default     = ""

  validation {
    condition     = var.health_build_body == "" || can(jsondecode(var.health_build_body))
    error_message = "health_build_body is empty or the JSON of a Cloud Build Build."
  }
}

variable "health_schedule" {
  description = "Cron (UTC) of the health check's Cloud Scheduler job (builder/inputs/recovery.py INTERVAL_MIN)."
  type        = string
  default     = "*/10 * * * *"

  validation {
    condition     = length(split(" ", var.health_schedule)) == 5
    error_message = "health_schedule is a five-field cron such as */10 * * * *."
  }
}
