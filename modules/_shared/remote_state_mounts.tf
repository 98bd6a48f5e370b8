# Shared: the roots whose hosts mount the environment's storage (tpu_vm, tpu_mig) link this file
# (modules/_shared/README.md). What filestore and shared_pd applied, read from their state (same
# bucket, prefix <env>/<module>): startup.sh gets the NFS export from the first, the hosts attach
# the disk named by the second. Both modules are applied before the hosts' root.

data "terraform_remote_state" "filestore" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/filestore"
  }
}

data "terraform_remote_state" "shared_pd" {
  count   = var.shared_pd_attach ? 1 : 0
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/shared_pd"
  }
}
