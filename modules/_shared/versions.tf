# The one provider pin of every root module: each root's versions.tf is a relative symlink to
# this file (modules/_shared/README.md). tpu_vm adds google-beta in its versions_google_beta.tf.
terraform {
  required_version = ">= 1.5"

  # bucket and prefix come from `terraform init -backend-config=...`
  # (prefix <ENV_BUILD_NAME>/<plan module>: filestore, shared_pd, tpu, mig, dashboard).
  backend "gcs" {}

  required_providers {
    google = {
      source = "hashicorp/google"
      # google_tpu_node (modules/tpu_node) was removed in provider 7.0: keep this below 7.
      version = ">= 5, < 7"
    }
  }
}
