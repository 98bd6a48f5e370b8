output "dashboard_id" {
  description = "Id of the dashboard (the last part of its resource name projects/<number>/dashboards/<id>)."
  value       = element(split("/", google_monitoring_dashboard.this.id), 3)
}

output "console_url" {
  description = "Cloud console page of the dashboard (tpubuild status prints it)."
  value       = "https://console.cloud.google.com/monitoring/dashboards/custom/${element(split("/", google_monitoring_dashboard.this.id), 3)}?project=${var.project_id}"
}

output "step_metric_type" {
  description = "Metric type of the log-based training step counter."
  value       = "logging.googleapis.com/user/${google_logging_metric.steps.name}"
}
