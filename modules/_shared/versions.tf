# The one provider pin of every root module: each root's versions.tf is a relative symlink to
# this file (modules/_shared/README.md). tpu_vm adds google-beta in its versions_override.tf; the
# legacy destroy-only node roots (tpu_node, mig) keep google 6.x through versions_legacy_override.tf.
terraform {
  required_version = ">= 1.5"

  # bucket and prefix come from `terraform init -backend-config=...`
  # (prefix <ENV_BUILD_NAME>/<plan module>: filestore, shared_pd, tpu, mig, dashboard).
  backend "gcs" {}

  required_providers {
    google = {
      source = "hashicorp/google"
      # 8.x, from 8.7: what docs/terraform.md ("Provider 8.x") says about a state written by 6.x.
      version = "~> 8.7"
    }
  }
}
