# Network access to a set of hosts (the MIG workers, or a TPU VM slice's hosts): SSH only through
# Identity-Aware Proxy, and traffic between the hosts inside the VPC. A child module of mig and
# tpu_vm, so a rule exists exactly as long as the hosts it serves; no backend, no tfvars.

resource "google_compute_firewall" "iap_ssh" {
  name          = "${var.name}-iap-ssh"
  network       = var.network
  description   = "SSH to the ${var.name} ${var.hosts} through Identity-Aware Proxy TCP forwarding only."
  direction     = "INGRESS"
  source_ranges = ["35.235.240.0/20"]
  target_tags   = [var.network_tag]

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }

  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}

# Between the hosts (source tag = target tag), and from internal_source_ranges when given (the
# TPU Node's cidr_block on mig); null leaves source_ranges unset, so only the tag matches.
resource "google_compute_firewall" "internal" {
  name          = "${var.name}-internal"
  network       = var.network
  description   = var.internal_description
  direction     = "INGRESS"
  source_tags   = [var.network_tag]
  source_ranges = var.internal_source_ranges
  target_tags   = [var.network_tag]

  allow {
    protocol = "tcp"
  }

  allow {
    protocol = "udp"
  }

  allow {
    protocol = "icmp"
  }
}
