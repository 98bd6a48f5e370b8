"""TorchTPU's facts that both the launch (launch.py, standard library) and the plug-in declaration
(keys.py, which tpubuild imports for every values.env) read: plain constants, no imports."""

#: The word every progress line of a TorchTPU script prints; the dashboard's step rate counts it.
STEP_WORD = "tpubuild-step"
#: Port of torch-tpu's profiler server on every host (tpu_observe.py ``serve``).
PROFILER_PORT = 9012
