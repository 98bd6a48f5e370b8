terraform {
  required_version = ">= 1.5"

  # bucket and prefix come from `terraform init -backend-config=...` (prefix <ENV_BUILD_NAME>/tpu).
  backend "gcs" {}

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5, < 7"
    }
  }
}
