"""A plan -> the Cloud Build config (pipeline.py, yamlout.py), and the commands a training watch runs
(observe.py), and the gcloud lines that reach a slice's hosts (mig_hosts.py: argv, no Google client, so
``train --dry-run`` loads no ``builder.cloud`` module). Imports only the layers below it.
"""
