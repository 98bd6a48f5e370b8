# Shared: every module that declares var.external_ips links this file (modules/_shared/README.md).

variable "external_ips" {
  description = "Give each TPU VM host an ephemeral external IP (TPU_EXTERNAL_IPS). Off by default: the hosts then need Cloud NAT for the internet and Private Google Access for Google APIs."
  type        = bool
  default     = false
}
