# State migration of the refactor into the child module host_identity: the seeder's account and
# grants keep their remote objects and only change address (no destroy/create). The single
# logWriter grant becomes the "roles/logging.logWriter" instance of the child's for_each. Keep
# these blocks as long as an environment created before the refactor may still be applied.

moved {
  from = google_service_account.seeder
  to   = module.seeder_identity.google_service_account.this
}

moved {
  from = google_project_iam_member.seeder
  to   = module.seeder_identity.google_project_iam_member.project["roles/logging.logWriter"]
}

moved {
  from = google_storage_bucket_iam_member.seeder_dataset
  to   = module.seeder_identity.google_storage_bucket_iam_member.dataset
}

moved {
  from = google_storage_bucket_iam_member.seeder_workspace
  to   = module.seeder_identity.google_storage_bucket_iam_member.workspace
}

# The disk became slot "a" of google_compute_disk.this (for_each over the slots: the
# make-before-break move to another zone).
moved {
  from = google_compute_disk.this
  to   = google_compute_disk.this["a"]
}
