# Shared: every module that declares var.zone links this file (modules/_shared/README.md).

variable "zone" {
  description = "Zone of the environment (ZONE): the location of the TPU, the hosts, the shared disk and a zonal Filestore tier (BASIC_HDD, BASIC_SSD, ZONAL, HIGH_SCALE_SSD)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", var.zone))
    error_message = "zone must look like europe-west4-a."
  }
}
