# tpu_mig's one provider beyond the shared pin of the roots (versions.tf -> ../_shared/versions.tf):
# google_compute_future_reservation and workload_policy.accelerator_topology_mode exist only in
# google-beta. A module may hold one required_providers block, so
# this is an override file: Terraform merges its required_providers into versions.tf's provider by
# provider (https://developer.hashicorp.com/terraform/language/files/override).
terraform {
  required_providers {
    google-beta = {
      source  = "hashicorp/google-beta"
      version = "~> 8.7"
    }
  }
}
