"""The catalogue: every Terraform root (modules.py) and the parts its entries are made of, the step
kinds and their minutes, the guard's resource classes, the builder image, prices. Imports only facts
and config.
"""
