variable "tpu_id" {
  description = "ID of the TPU the TTL belongs to: a new TPU gets a new job."
  type        = string
  validation {
    condition     = length(var.tpu_id) > 0
    error_message = "tpu_id is the TPU's id."
  }
}
