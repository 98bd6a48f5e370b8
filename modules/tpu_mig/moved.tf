# The slice became slot "a" of each of its resources (for_each over the slots: make-before-break,
# main.tf), but for the workload policy, whose slot a keeps its address (main.tf says why). A
# state written before the slots keeps its remote objects: plan shows "has moved to",
# no destroy/create. Keep these blocks as long as an environment applied before the slots may
# still be applied; removing one later makes Terraform destroy and recreate the slice there.

moved {
  from = google_compute_instance_template.slice
  to   = google_compute_instance_template.slice["a"]
}

moved {
  from = google_compute_instance_group_manager.slice
  to   = google_compute_instance_group_manager.slice["a"]
}

# Flex-start no longer uses a resize request (Google refuses one on a TPU MIG; the group is a bulk
# group grown from 0: docs/modules.md). A state that holds one forgets it rather than deleting it:
# deleting an accepted request would cancel the VMs it has not brought yet, and a new flex-start
# group replaces the old one anyway (its target size mode changes), which the guard shows.
removed {
  from = google_compute_resize_request.slice

  lifecycle {
    destroy = false
  }
}
