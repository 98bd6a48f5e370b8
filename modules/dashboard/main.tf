provider "google" {
  project = var.project_id
}

# The dashboard JSON is made in one place, builder/inputs/dashboard.py (tpubuild passes it as a string);
# this module only applies it, so `tpubuild render`/`plan` and the tests see exactly what is created.
resource "google_monitoring_dashboard" "this" {
  project        = var.project_id
  dashboard_json = var.dashboard_json
}

# Training progress as a metric: every line with the model's step word (its keys.py STEP_WORD:
# fairseq's `train_inner` for roberta, `tpubuild-step` for torchtpu) that a host sends to the
# tpubuild-train log (models/xla_observe.py) counts once; the dashboard plots its rate. The
# description names those lines by the model's STEP_LABEL ("fairseq train_inner" for roberta, as
# before models were plug-ins, so existing environments plan no change; else the step word).
resource "google_logging_metric" "steps" {
  project     = var.project_id
  name        = var.step_metric_name
  description = "Training progress lines (${var.step_label}) logged by the hosts of ${var.env_name}."
  filter      = var.step_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "tpubuild ${var.env_name} training log steps"
  }
}
