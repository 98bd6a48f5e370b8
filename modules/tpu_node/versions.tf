terraform {
  required_version = ">= 1.5"

  # bucket and prefix come from `terraform init -backend-config=...` (prefix <ENV_BUILD_NAME>/tpu).
  backend "gcs" {}

  required_providers {
    google = {
      source = "hashicorp/google"
      # google_tpu_node was removed in provider 7.0: keep this below 7.
      version = ">= 5, < 7"
    }
  }
}
