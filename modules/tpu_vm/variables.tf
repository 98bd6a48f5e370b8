variable "project_id" {
  description = "Google Cloud project that holds the environment."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "zone" {
  description = "Zone of the environment (ZONE)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", var.zone))
    error_message = "zone must look like europe-west4-a."
  }
}

variable "env_name" {
  description = "ENV_BUILD_NAME: names the remote-state prefixes (<env_name>/<module>) and the workspace."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,22}[a-z0-9])?$", var.env_name))
    error_message = "env_name must be 1-24 lowercase letters, digits or hyphens, not starting or ending with a hyphen."
  }
}

variable "state_bucket" {
  description = "The environment's Terraform state bucket: the other modules' state and the workspace/<env_name>/ objects are read from it."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$", var.state_bucket))
    error_message = "state_bucket must be a bucket name (3-63 lowercase letters, digits, -, _ or .)."
  }
}

variable "service_account_id" {
  description = "account_id of the TPU VM hosts' dedicated service account (6-30 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.service_account_id))
    error_message = "service_account_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "network" {
  description = "VPC network of the TPU VM hosts (name, e.g. default); the firewall rules are created in it."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.network))
    error_message = "network must be a network name such as default."
  }
}

variable "subnetwork" {
  description = "Subnetwork of the TPU VM hosts; empty uses the network's subnet in the region (auto-mode networks)."
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

variable "dataset_bucket" {
  description = "Bucket of GCS_DATASET; the hosts get roles/storage.objectViewer on it. Empty: no dataset bucket, no grant."
  type        = string

  validation {
    condition     = var.dataset_bucket == "" || can(regex("^[a-z0-9][-a-z0-9_.]{1,221}[a-z0-9]$", var.dataset_bucket))
    error_message = "dataset_bucket must be empty or a bucket name (no gs:// and no path)."
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

variable "name" {
  description = "Name of the TPU VM slice, of its network tag and firewall rules (tpu-<ENV_BUILD_NAME>)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,45}[a-z0-9])?$", var.name))
    error_message = "name must be 1-47 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "accelerator_type" {
  description = "TPU VM accelerator type, v2 through v6e (e.g. v4-32, v5litepod-16, v6e-8)."
  type        = string

  validation {
    condition     = can(regex("^(v2|v3|v4|v5p|v5litepod|v6e)-[0-9]+$", var.accelerator_type))
    error_message = "accelerator_type must look like v4-32, v5p-8, v5litepod-16 or v6e-8."
  }
}

variable "runtime_version" {
  description = "TPU VM software version (tpu-ubuntu2204-base, v2-alpha-tpuv5-lite, v2-alpha-tpuv5, v2-alpha-tpuv6e)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9.]*[a-z0-9]$", var.runtime_version)) && !startswith(var.runtime_version, "pytorch-")
    error_message = "runtime_version must be a TPU VM runtime such as tpu-ubuntu2204-base; pytorch-* runtimes are TPU Node runtimes (modules/tpu_node)."
  }
}

variable "external_ips" {
  description = "Give each TPU VM host an external IP (TPU_EXTERNAL_IPS). Off by default: hosts then need Cloud NAT for the internet and Private Google Access for Google APIs."
  type        = bool
  default     = false
}

variable "preemptible" {
  description = "Create a preemptible TPU VM (TPU_PROVISIONING=preemptible, or legacy TPU_PREEMPTIBLE; v2-v4 only)."
  type        = bool
}

variable "spot" {
  description = "Create a Spot TPU VM (TPU_PROVISIONING=spot, or legacy TPU_SPOT)."
  type        = bool
}

variable "reserved" {
  description = "Use the project's matching TPU reservation (TPU_PROVISIONING=reservation, or legacy TPU_RESERVED)."
  type        = bool
}

variable "queued" {
  description = "Request the slice as a queued resource (TPU_QUEUED): Terraform then creates only the hosts' identity and firewall, and the pipeline's tpu-queue step requests the slice with gcloud from the queued_request output."
  type        = bool
  default     = false
}

variable "labels" {
  description = "Labels put on the TPU VM (tpubuild-env, managed-by)."
  type        = map(string)

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "label keys must start with a lowercase letter; keys and values hold lowercase letters, digits, _ and - (at most 63)."
  }
}

variable "ttl_hours" {
  description = "ENV_TTL_HOURS: hours after the TPU's creation when modules/ttl destroys it (0: no TTL)."
  type        = number
  default     = 0

  validation {
    condition     = var.ttl_hours >= 0 && var.ttl_hours <= 8760 && floor(var.ttl_hours) == var.ttl_hours
    error_message = "ttl_hours is a whole number of hours from 0 (no TTL) to 8760."
  }
}

variable "ttl_build_body" {
  description = "JSON of the destroy-scoped Build the TTL job creates (builder/ttl.py); empty without a TTL."
  type        = string
  default     = ""

  validation {
    condition     = var.ttl_build_body == "" || can(jsondecode(var.ttl_build_body))
    error_message = "ttl_build_body is empty or the JSON of a Cloud Build Build."
  }
}
