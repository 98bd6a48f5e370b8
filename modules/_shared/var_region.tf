# Shared: every module that declares var.region links this file (modules/_shared/README.md).

variable "region" {
  description = "Region of the environment (ZONE's region): the location of REGIONAL and ENTERPRISE Filestore instances and of the TTL's Cloud Scheduler job."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must look like europe-west4."
  }
}
