# Shared: the roots whose resource is the training hosts (tpu_vm: the TPU VM; tpu_mig: the
# instance template) link this file (modules/_shared/README.md). The instance metadata every host
# boots with, the keys env_setup/scripts/startup.sh reads (docs/architecture.md, "Instance
# metadata read by env_setup/scripts/startup.sh"). The linking module sets local.arch (TPU_ARCH)
# and local.pd_device (the shared PD's device name on its hosts), and merges in keys of its own.

locals {
  host_metadata = {
    "enable-oslogin"            = "TRUE"
    "block-project-ssh-keys"    = "TRUE"
    "enable-guest-attributes"   = "TRUE"
    "startup-script"            = file("${path.module}/../../env_setup/scripts/startup.sh")
    "tpubuild-arch"             = local.arch
    "tpubuild-env"              = var.env_name
    "tpubuild-mount-point"      = var.mount_point
    "tpubuild-nfs-ip"           = data.terraform_remote_state.filestore.outputs.nfs_ip
    "tpubuild-nfs-share"        = data.terraform_remote_state.filestore.outputs.share_name
    "tpubuild-shared-pd-device" = var.shared_pd_attach ? local.pd_device : ""
    "tpubuild-tpu-name"         = var.name
    "tpubuild-tpu-endpoints"    = ""
    "tpubuild-workspace"        = "gs://${var.state_bucket}/workspace/${var.env_name}"
    "tpubuild-setup-script"     = var.setup_script
  }
}
