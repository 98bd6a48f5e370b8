variable "dashboard_json" {
  description = "The dashboard (REST JSON of google.monitoring.dashboard.v1.Dashboard), rendered by builder/inputs/dashboard.py."
  type        = string

  validation {
    condition     = can(jsondecode(var.dashboard_json).displayName) && can(jsondecode(var.dashboard_json).mosaicLayout.tiles)
    error_message = "dashboard_json must be a JSON dashboard with a displayName and mosaicLayout tiles."
  }
}

variable "step_metric_name" {
  description = "Name of the log-based metric that counts training progress lines (tpubuild_train_steps_<env>)."
  type        = string

  validation {
    condition     = can(regex("^tpubuild_train_steps_[a-z0-9_]{1,24}$", var.step_metric_name))
    error_message = "step_metric_name must be tpubuild_train_steps_ followed by the environment name with _ for -."
  }
}

variable "step_log_filter" {
  description = "Cloud Logging filter of the entries the step metric counts (the tpubuild-train log of this environment)."
  type        = string

  validation {
    condition     = can(regex("logs/tpubuild-train", var.step_log_filter))
    error_message = "step_log_filter must select the tpubuild-train log."
  }
}

variable "step_label" {
  description = "How the step metric's description names the lines it counts (the model's keys.py STEP_LABEL, else its step word; roberta: fairseq train_inner)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9 _.:/-]{0,63}$", var.step_label))
    error_message = "step_label must be 1 to 64 letters, digits, spaces or _ . : / -, starting with a letter or digit."
  }
}
