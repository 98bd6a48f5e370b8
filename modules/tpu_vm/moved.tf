# State migration of the refactor into the child modules host_identity and host_firewall: the
# resources keep their remote objects and only change address (plan shows "has moved to", no
# destroy/create). Keep these blocks as long as an environment created before the refactor may
# still be applied; removing one later makes Terraform destroy and recreate that resource there.

# The slice became slot "a" of google_tpu_v2_vm.this (for_each over the slots: make-before-break).
# A chain, so both earlier layouts move: the slice without count (before TPU_QUEUED) and this[0].
moved {
  from = google_tpu_v2_vm.this
  to   = google_tpu_v2_vm.this[0]
}

moved {
  from = google_tpu_v2_vm.this[0]
  to   = google_tpu_v2_vm.this["a"]
}

moved {
  from = google_service_account.worker
  to   = module.tpu_vm_identity.google_service_account.this
}

moved {
  from = google_project_iam_member.worker
  to   = module.tpu_vm_identity.google_project_iam_member.project
}

moved {
  from = google_storage_bucket_iam_member.dataset
  to   = module.tpu_vm_identity.google_storage_bucket_iam_member.dataset
}

moved {
  from = google_storage_bucket_iam_member.workspace
  to   = module.tpu_vm_identity.google_storage_bucket_iam_member.workspace
}

moved {
  from = google_compute_firewall.iap_ssh
  to   = module.tpu_vm_firewall.google_compute_firewall.iap_ssh
}

moved {
  from = google_compute_firewall.internal
  to   = module.tpu_vm_firewall.google_compute_firewall.internal
}
