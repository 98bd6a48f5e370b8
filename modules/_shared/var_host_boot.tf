# Shared: every module that declares var.subnetwork, var.shared_pd_attach, var.mount_point and var.setup_script links this file (modules/_shared/README.md).

variable "subnetwork" {
  description = "Subnetwork of the hosts; empty uses the network's subnet in the region (auto-mode networks)."
  type        = string

  validation {
    condition     = var.subnetwork == "" || can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.subnetwork))
    error_message = "subnetwork must be empty or a subnetwork name."
  }
}

variable "shared_pd_attach" {
  description = "Attach the shared dataset disk (modules/shared_pd) READ_ONLY (SHARED_PD_DISK_ATTACH)."
  type        = bool
}

variable "mount_point" {
  description = "Where startup.sh mounts nfs_share/ and shared_pd/ (MOUNT_POINT)."
  type        = string

  validation {
    condition     = can(regex("^/[^[:space:]]*$", var.mount_point)) && var.mount_point != "/"
    error_message = "mount_point must be an absolute path other than /, without spaces."
  }
}

variable "setup_script" {
  description = "MIG_SETUP_SCRIPT: repo-relative path, inside the workspace, of a script startup.sh runs after the mounts; empty for none."
  type        = string

  validation {
    condition     = var.setup_script == "" || (!startswith(var.setup_script, "/") && !contains(split("/", var.setup_script), ".."))
    error_message = "setup_script must be empty or a relative path without '..'."
  }
}
