# Shared: every module that declares var.labels links this file (modules/_shared/README.md).

variable "labels" {
  description = "Labels put on what the module creates that takes labels (tpubuild-env, managed-by)."
  type        = map(string)

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "label keys must start with a lowercase letter; keys and values hold lowercase letters, digits, _ and - (at most 63)."
  }
}
