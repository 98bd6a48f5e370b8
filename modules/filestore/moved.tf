# The instance became slot "a" of google_filestore_instance.this (for_each over the slots: the
# make-before-break move to another zone). Keep this block as long as an environment created
# before the slots may still be applied.

moved {
  from = google_filestore_instance.this
  to   = google_filestore_instance.this["a"]
}
