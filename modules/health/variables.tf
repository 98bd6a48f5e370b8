# Every input of this module is shared with its callers: var_project_id.tf, var_region.tf,
# var_env_name.tf and var_health.tf link modules/_shared (README.md lists them).
