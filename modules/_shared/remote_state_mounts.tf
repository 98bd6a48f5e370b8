# Shared: the roots whose hosts mount the environment's storage (tpu_vm, tpu_mig) link this file
# (modules/_shared/README.md). What filestore and shared_pd applied, read from their state (same
# bucket, prefix <env>/<module>) when it is there: the slice is asked for first, beside them
# (docs/pipeline.md, "The slice first"), so on a create both states are still empty and the
# defaults stand. The NFS export goes into the hosts' metadata only for a slice that had it
# before (local.nfs in each root); a slice made before Filestore reads it from the workspace at
# boot (startup.sh). The disk's name is read where an instance template carries the disk.

data "terraform_remote_state" "filestore" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/filestore"
  }
  defaults = {
    nfs_ip     = ""
    share_name = ""
  }
}

data "terraform_remote_state" "shared_pd" {
  count   = var.shared_pd_attach ? 1 : 0
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/shared_pd"
  }
  defaults = {
    id        = ""
    name      = ""
    self_link = ""
  }
}
