"""TorchTPU's profiler on a host (``tpubuild profile``; builder/render/observe.py runs ``capture``).

* :func:`serve`, called by the training script (models/torchtpu/examples/tiny_transformer.py does;
  any script opts in with ``import tpu_observe; tpu_observe.serve()``, train.sh puts this folder on
  PYTHONPATH): starts torch-tpu's profiler server in the host's local rank 0 on
  ``$TPUBUILD_PROFILER_PORT`` (train.sh sets it from models/torchtpu/launch.py ``PROFILER_PORT``).
  torch-tpu 0.2.0's public ``torch.tpu.profiler`` exports only ``TpuProfilerConfig`` (for
  ``torch.profiler.profile``); the on-demand server is ``torch_tpu._internal.profiler.start_server``.
* ``capture --port P --duration-ms MS --logdir DIR``: an XProf capture from that server (the
  ``xprof`` package's client, installed on the hosts without its dependencies), written as
  ``DIR/plugins/profile/<run>/<host>.xplane.pb``: TensorBoard's (XProf's) layout, as torch_xla's.
  Exit 3 when no server answers (builder/commands/observe.py says no training runs with one).

Standard library at import; torch-tpu and xprof are imported where they are used.
"""

from __future__ import annotations

import argparse
import os
import sys

PORT_ENV = "TPUBUILD_PROFILER_PORT"


def serve() -> int:
    """Start the profiler server in local rank 0 when ``$TPUBUILD_PROFILER_PORT`` is set; the port, or 0."""
    port = int(os.environ.get(PORT_ENV, "0") or 0)
    if not port or int(os.environ.get("LOCAL_RANK", "0")) != 0:
        return 0
    from torch_tpu._internal import profiler  # torch-tpu 0.2.0: not in the public torch.tpu.profiler

    profiler.start_server(port)
    print(f"tpubuild: TorchTPU profiler server on port {port}", file=sys.stderr, flush=True)
    return port


def capture(port: int, duration_ms: int, logdir: str) -> int:
    from xprof.convert import _pywrap_profiler_plugin as xprof

    os.makedirs(logdir, exist_ok=True)
    try:
        xprof.trace(f"localhost:{port}", logdir, "", True, duration_ms, 3, {})
    except Exception as exc:  # noqa: BLE001  (the client raises what the C library reports)
        print(f"tpubuild: no profile from port {port} on {os.uname().nodename}: {exc}", file=sys.stderr)
        return 3
    print(f"tpubuild: profile written under {logdir}/plugins/profile")
    return 0


#: install.sh's venv, where torch-tpu and xprof are (the host's python3 may be 3.10 without them).
VENV_PYTHON = os.path.expanduser("~/.tpubuild/venv-torchtpu/bin/python")


def main(argv: list[str]) -> int:
    try:
        import xprof  # noqa: F401
    except ImportError:  # started with the host's python3 (builder/render/observe.py): the venv's instead
        if os.path.exists(VENV_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(VENV_PYTHON):
            os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__), *argv])
    p = argparse.ArgumentParser(prog="tpu_observe.py")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--duration-ms", type=int, required=True)
    c.add_argument("--logdir", required=True)
    a = p.parse_args(argv)
    return capture(a.port, a.duration_ms, a.logdir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
