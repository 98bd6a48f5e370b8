provider "google" {
  project = var.project_id
}

locals {
  # BASIC_HDD, BASIC_SSD, ZONAL and HIGH_SCALE_SSD instances live in a zone; REGIONAL and
  # ENTERPRISE instances in a region.
  location = contains(["REGIONAL", "ENTERPRISE"], var.tier) ? var.region : var.zone
}

resource "google_filestore_instance" "this" {
  name     = var.name
  location = local.location
  tier     = var.tier
  labels   = var.labels

  file_shares {
    name        = var.share_name
    capacity_gb = var.capacity_gb
  }

  networks {
    network      = var.network
    modes        = ["MODE_IPV4"]
    connect_mode = "DIRECT_PEERING"
  }
}
