variable "name" {
  description = "Name of the hosts' group (MIG or TPU VM); the rules are <name>-iap-ssh and <name>-internal."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,52}[a-z0-9])?$", var.name))
    error_message = "name must be 1-54 lowercase letters, digits or hyphens, starting with a letter (the rule names are at most 63)."
  }
}

variable "network_tag" {
  description = "Network tag the hosts carry; both rules target it and the internal rule takes it as its source."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.network_tag))
    error_message = "network_tag must be 1-63 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "hosts" {
  description = "What the hosts are, in the SSH rule's description (\"SSH to the <name> <hosts> through ...\"), e.g. workers."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9 ]{0,39}$", var.hosts))
    error_message = "hosts must be 1-40 letters, digits or spaces, starting with a letter."
  }
}

variable "internal_description" {
  description = "Description of the <name>-internal rule: which traffic it carries."
  type        = string

  validation {
    condition     = length(trimspace(var.internal_description)) > 0 && length(var.internal_description) <= 2048
    error_message = "internal_description must be 1-2048 characters, not only spaces."
  }
}

variable "internal_source_ranges" {
  description = "CIDR ranges that may also reach the hosts on the internal rule (mig: the TPU Node's cidr_block); null for none. Never a /0."
  type        = list(string)
  default     = null

  validation {
    condition     = try(alltrue([for r in var.internal_source_ranges : can(cidrhost(r, 0)) && !endswith(r, "/0")]), var.internal_source_ranges == null)
    error_message = "internal_source_ranges must be null or a list of CIDR ranges, none of them 0.0.0.0/0 or ::/0."
  }
}
