"""A plan -> the Cloud Build config (pipeline.py, yamlout.py), and the commands a training watch runs
(observe.py). Imports only the layers below it.
"""
