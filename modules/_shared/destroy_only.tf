# Shared: the legacy node architecture's roots (modules/tpu_node, modules/mig) link this file
# (modules/_shared/README.md). Google Cloud stopped creating TPU Nodes on 2025-04-25; those roots
# declare no resources any more, so `terraform plan -destroy` deletes what their state holds.
#
# Any other plan would delete it too, silently: this resource's precondition stops every plan but
# -destroy (a destroy plan never creates it, so never checks it). tpubuild renders only destroy
# for TPU_ARCH="node"; this stops a hand-run `terraform apply` as well.
locals {
  tpu_nodes_ended = "2025-04-25T00:00:00Z"
}

resource "terraform_data" "destroy_only" {
  lifecycle {
    precondition {
      condition     = timecmp(plantimestamp(), local.tpu_nodes_ended) < 0
      error_message = "This root is destroy-only: Google Cloud stopped creating TPU Nodes on 2025-04-25, so only `terraform plan -destroy` (tpubuild's destroy action) runs here. Move the environment to TPU_ARCH=\"vm\" with `tpubuild migrate`."
    }
  }
}
