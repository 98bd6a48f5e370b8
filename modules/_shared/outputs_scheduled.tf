# The environment's scheduled builds, as the slice roots (tpu_vm, tpu_mig) tell them: the TTL
# (modules/ttl, ENV_TTL_HOURS) and the health check (modules/health, TPU_RECOVERY). Each linking
# root sets local.ttl_call and local.health_call (its module calls, count 0 or 1).

output "ttl_job" {
  description = "The TTL's Cloud Scheduler job, which destroys the slice when ENV_TTL_HOURS expires (empty without a TTL)."
  value       = var.ttl_hours > 0 ? local.ttl_call[0].job : ""
}

output "health_job" {
  description = "The health check's Cloud Scheduler job (empty without TPU_RECOVERY)."
  value       = var.health_build_body != "" ? local.health_call[0].job : ""
}
