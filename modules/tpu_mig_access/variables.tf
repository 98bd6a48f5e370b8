# No variable of its own: name (var_slice_name.tf) is shared with modules/tpu_mig, and the
# others (var_*.tf) are the environment's; all are links into modules/_shared.
