"""Watch a PyTorch/XLA training from outside: torch_xla's profiler server and metrics report.

Standard library at import; torch_xla is imported only when something is started, so this file
runs anywhere (``tpubuild profile`` runs its ``capture`` on a host, tests run it on CPU).

Three ways to use it (docs/models.md, "Watch it"):

* **Run a training through it** (what ``models/roberta/train.sh`` does)::

      python xla_observe.py -m fairseq_cli.train ARGS...     # or: python xla_observe.py script.py ARGS...

  It wraps ``torch_xla.distributed.xla_multiprocessing.spawn`` (which ``torch_xla.launch`` and
  fairseq use), so every training process it spawns calls :func:`start` first, and writes the
  metrics report when its function returns.
* **Call it in your own script** (``tpubuild run`` scripts, one process per host)::

      import xla_observe; xla_observe.start()

* **Capture** (what ``tpubuild profile`` runs on a host)::

      python xla_observe.py capture --port 9012 --duration-ms 10000 --logdir DIR

  ``torch_xla.debug.profiler.trace`` writes ``DIR/plugins/profile/<run>/<host>.xplane.pb``:
  the layout TensorBoard's profile plugin (XProf) reads, with ``DIR`` as ``--logdir``.

Environment (set by the launch; nothing happens when they are unset):

``TPUBUILD_PROFILER_PORT``
    Port of the profiler server, started in the local master process of every host
    (``torch_xla.debug.profiler.start_server``). tpubuild uses :data:`DEFAULT_PORT` (9012, the port
    of Google's PyTorch/XLA profiling guide); the host firewall admits only IAP SSH, so the
    server is reached on the host itself (``tpubuild profile`` runs the capture there).
``TPUBUILD_METRICS_REPORT``
    File the local master process writes ``torch_xla.debug.metrics.metrics_report()`` to when its
    training function returns (and at interpreter exit after :func:`start`).
``TPUBUILD_METRICS_WARMUP``
    Seconds (default 300): when the warm-up snapshot ``host-<N>.metrics.warmup.txt`` is taken.
``TPUBUILD_METRICS_INTERVAL``
    Seconds; when set, the report is also rewritten that often during the run
    (``tpubuild train --metrics``), so ``tpubuild logs --metrics`` sees a live one.
"""

from __future__ import annotations

import argparse
import atexit
import os
import runpy
import socket
import sys
import threading
from typing import Any

DEFAULT_PORT = 9012
PORT_ENV = "TPUBUILD_PROFILER_PORT"
REPORT_ENV = "TPUBUILD_METRICS_REPORT"
INTERVAL_ENV = "TPUBUILD_METRICS_INTERVAL"
WARMUP_ENV = "TPUBUILD_METRICS_WARMUP"
DEFAULT_WARMUP_S = 300


def warmup_path(report: str) -> str:
    """``host-0.metrics.txt`` → ``host-0.metrics.warmup.txt``: the report once the warm-up is over;
    compiles after warm-up = the last report's minus this one's."""
    root, ext = os.path.splitext(report)
    return f"{root}.warmup{ext or '.txt'}"

_server: Any = None  # the ProfilerServer: it stops when garbage collected
_started = False


def _local_master() -> bool:
    import torch_xla.core.xla_model as xm

    return bool(xm.is_master_ordinal(local=True))


def write_report(path: str | None = None) -> str | None:
    """Write torch_xla's metrics report to ``path`` (default ``$TPUBUILD_METRICS_REPORT``)
    atomically; returns the path, or None when there is nowhere to write."""
    path = path or os.environ.get(REPORT_ENV)
    if not path:
        return None
    import torch_xla.debug.metrics as met

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(met.metrics_report())
    os.replace(tmp, path)
    return path


def _periodic(interval: float | None, warmup: float) -> None:
    stop = threading.Event()

    def loop() -> None:
        if stop.wait(warmup):
            return
        try:
            write_report(warmup_path(os.environ[REPORT_ENV]))
        except Exception as exc:  # noqa: BLE001 - observing must never stop the training
            print(f"xla_observe: warm-up metrics report not written: {exc}", file=sys.stderr)
        while interval and not stop.wait(interval):
            try:
                write_report()
            except Exception as exc:  # noqa: BLE001 - observing must never stop the training
                print(f"xla_observe: metrics report not written: {exc}", file=sys.stderr)

    threading.Thread(target=loop, name="xla_observe-metrics", daemon=True).start()


def start(port: int | None = None) -> bool:
    """In a process that runs XLA: start the profiler server (local master only) on ``port`` or
    ``$TPUBUILD_PROFILER_PORT``, and arrange for the metrics report. Idempotent. Returns whether
    this process is the one that serves (and reports) on its host."""
    global _server, _started
    if _started:
        return _server is not None or bool(os.environ.get(REPORT_ENV))
    _started = True
    if not _local_master():
        return False
    raw = port if port is not None else os.environ.get(PORT_ENV, "")
    if raw not in ("", None):
        import torch_xla.debug.profiler as xp

        _server = xp.start_server(int(raw))
        print(f"xla_observe: profiler server on port {int(raw)} (pid {os.getpid()})", file=sys.stderr, flush=True)
    if os.environ.get(REPORT_ENV):
        atexit.register(write_report)
        interval = os.environ.get(INTERVAL_ENV, "")
        _periodic(float(interval) if interval else None, float(os.environ.get(WARMUP_ENV, DEFAULT_WARMUP_S)))
    return True


class _Observed:
    """A spawn target that starts observing first and writes the report when it returns
    (spawned processes leave through os._exit, which skips atexit). Picklable."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, index: int, *args: Any) -> Any:
        serving = start()
        try:
            return self.fn(index, *args)
        finally:
            if serving:
                write_report()


def install() -> None:
    """Wrap ``xmp.spawn`` so that every training process observes itself."""
    import torch_xla.distributed.xla_multiprocessing as xmp

    if getattr(xmp.spawn, "_xla_observe", False):
        return
    original = xmp.spawn

    def spawn(fn: Any, *args: Any, **kwargs: Any) -> Any:
        return original(_Observed(fn), *args, **kwargs)

    spawn._xla_observe = True  # type: ignore[attr-defined]
    xmp.spawn = spawn


# ---------------------------------------------------------------- capture (tpubuild profile)

def listening(port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def capture(port: int, logdir: str, duration_ms: int) -> list[str]:
    """Trace the local profiler server for ``duration_ms`` into ``logdir``; returns the files
    written (``plugins/profile/<run>/...``). Exit 3 with one line when nothing listens."""
    if not listening(port):
        print(f"xla_observe: no profiler server on {socket.gethostname()}:{port}: no training is running "
              f"there (or it was launched without {PORT_ENV}); start one with 'tpubuild train'", file=sys.stderr)
        raise SystemExit(3)
    import torch_xla.debug.profiler as xp

    os.makedirs(logdir, exist_ok=True)
    xp.trace(f"localhost:{port}", logdir, duration_ms=duration_ms, num_tracing_attempts=3, timeout_s=60)
    found = []
    for root, _, files in os.walk(os.path.join(logdir, "plugins", "profile")):
        found += [os.path.join(root, f) for f in files]
    if not found:
        print(f"xla_observe: the capture wrote nothing under {logdir}/plugins/profile", file=sys.stderr)
        raise SystemExit(1)
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["capture"]:
        p = argparse.ArgumentParser(prog="xla_observe.py capture")
        p.add_argument("--port", type=int, default=DEFAULT_PORT)
        p.add_argument("--duration-ms", type=int, required=True)
        p.add_argument("--logdir", required=True)
        a = p.parse_args(argv[1:])
        for path in capture(a.port, a.logdir, a.duration_ms):
            print(path)
        return 0
    if not argv:
        print("usage: xla_observe.py -m MODULE ARGS... | SCRIPT ARGS... | capture ...", file=sys.stderr)
        return 2
    # by its module name, so that spawned processes unpickle xla_observe._Observed (a run target
    # replaces __main__ while it runs)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import xla_observe

    xla_observe.install()
    if argv[0] == "-m" and len(argv) > 1:
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
