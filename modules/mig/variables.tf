# project_id and zone (var_project_id.tf, var_zone.tf, linked from modules/_shared) configure the
# provider that deletes what the state holds; a destroy needs nothing else.
