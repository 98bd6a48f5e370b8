# The google-beta pin, for the roots that need a resource or field only google-beta has (tpu_vm:
# google_tpu_v2_vm; tpu_mig: google_compute_future_reservation and the workload policy's
# accelerator_topology_mode); each links it as versions_override.tf beside versions.tf. A module may
# hold one required_providers block, so this is an override file: Terraform merges its
# required_providers into versions.tf's provider by provider
# (https://developer.hashicorp.com/terraform/language/files/override).
terraform {
  required_providers {
    google-beta = {
      source  = "hashicorp/google-beta"
      version = "~> 8.7"
    }
  }
}
