# The provider pin of the legacy destroy-only node roots (tpu_node, mig): each one's versions.tf
# is a relative symlink to this file (modules/_shared/README.md). Every other root pins ~> 8.7
# (versions.tf).
terraform {
  required_version = ">= 1.5"

  # bucket and prefix come from `terraform init -backend-config=...` (<ENV_BUILD_NAME>/tpu, /mig).
  backend "gcs" {}

  required_providers {
    google = {
      source = "hashicorp/google"
      # Their state holds google_tpu_node, which provider 7.0.0 removed: a destroy needs a provider
      # that knows the type, so these roots stay on 6.x while a node environment may exist.
      version = ">= 5, < 7"
    }
  }
}
