"""What each Terraform root and scheduled build is given: tfvars, the dashboard, the TTL's and the
health check's builds, the root build and triggers, the step templates. Imports only facts, config
and the catalogue.
"""
