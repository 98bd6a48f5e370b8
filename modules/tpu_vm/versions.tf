terraform {
  required_version = ">= 1.5"

  # bucket and prefix come from `terraform init -backend-config=...` (prefix <ENV_BUILD_NAME>/tpu).
  backend "gcs" {}

  required_providers {
    # google_tpu_v2_vm exists only in google-beta.
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 5, < 7"
    }
    google = {
      source  = "hashicorp/google"
      version = ">= 5, < 7"
    }
  }
}
