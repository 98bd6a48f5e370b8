# The legacy destroy-only node roots (tpu_node, mig) link the roots' versions.tf like every root,
# and this override file besides: Terraform replaces versions.tf's constraint on google with this
# one, provider by provider (https://developer.hashicorp.com/terraform/language/files/override),
# so required_version and the backend stay in versions.tf alone. Their state holds
# google_tpu_node, which provider 7.0.0 removed: a destroy needs a provider that knows the type,
# so these roots stay on 6.x while a node environment may exist.
terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5, < 7"
    }
  }
}
