"""tpubuild: one values.env file to a Cloud TPU training environment for PyTorch/XLA."""

__version__ = "0.1.0"
