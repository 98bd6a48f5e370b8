"""The bottom layer: errors, records, the Action type, the TPU generation records, topology arithmetic,
file reading and console output. Imports nothing of builder/ above it.
"""
