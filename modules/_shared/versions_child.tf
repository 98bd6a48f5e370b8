# The provider pin of every child module (host_identity, host_firewall, ttl): each one's
# versions.tf is a relative symlink to this file (modules/_shared/README.md).
terraform {
  required_version = ">= 1.5"

  # A child module: no backend (its resources live in the state of the root that calls it) and no
  # provider block (it uses the caller's google provider). Its callers pin ~> 8.7 (versions.tf).
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 8.7"
    }
  }
}
