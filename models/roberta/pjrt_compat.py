"""fairseq 0.12 under PyTorch/XLA's PJRT runtime (torch_xla >= 2.7), without editing fairseq.

``train.sh`` runs ``python pjrt_compat.py FAIRSEQ_ARGS...`` instead of ``python -m
fairseq_cli.train``: importing this file patches fairseq in this process (and in every replica
``xmp.spawn`` starts, which re-imports it as ``__mp_main__``), then :func:`main` calls
``fairseq_cli.train.cli_main``. Where torch_xla or PJRT is absent (``--cpu``; the node
architecture's XRT images, torch_xla 1.x) nothing is patched and fairseq runs as upstream.

What fairseq 0.12's ``--tpu`` path gets wrong under PJRT, and what replaces it:

1. ``call_main`` spawns ``xmp.spawn(nprocs=min(world, 8))``; PJRT accepts only 1 or ``None``
   (``ValueError: Unsupported nprocs``). Replaced: ``xmp.spawn(nprocs=None)`` (one process per
   local chip, one thread per device of the chip), taken for every ``--tpu`` run, world size 1
   included, so one path runs everywhere. ``cfg`` travels as plain containers (fairseq's
   ``ChoiceEnum`` values do not pickle; fairseq itself stores cfg in checkpoints that way) and
   each replica rebuilds its own copy: on v2/v3 the two devices of a chip are threads of one
   process, and fairseq's ``distributed_init`` writes rank and device into ``cfg``.
2. ``xm.xrt_world_size`` / ``xm.get_ordinal`` are gone in torch_xla >= 2.7: fairseq's
   ``distributed.utils`` sees a view of ``xla_model`` whose ``xrt_world_size``,
   ``get_ordinal`` and ``get_local_ordinal`` come from ``torch_xla.runtime``.
3. The trainer's log step reads ``xm.get_memory_info(dev)["kb_free"]`` / ``["kb_total"]``
   (XRT keys). PJRT returns ``bytes_used`` / ``bytes_limit``: ``get_memory_info`` is wrapped to
   add the ``kb_*`` keys derived from them; a runtime without memory statistics (CPU) reports
   0 (fairseq logs ``gb_free 0``, ``gb_total 0``) instead of crashing.
4. Resume read-ahead: ``tpu_data_loader`` hands the epoch iterator to a ``ParallelLoader``,
   whose background thread runs ahead of training, so the position fairseq saves in
   ``checkpoint_last.pt`` (``iterations_in_epoch``, ``end_of_epoch``) counted batches that were
   loaded, not trained, and a resume skipped them. Replaced: the loader records, for every
   group it reads, the position of each counting iterator below it; as training takes that
   group, the positions become the iterators' *consumed* positions, which the epoch iterator
   reports instead. The saved position therefore equals the batches actually trained. The
   wrapper's start and length are read before the loader's thread starts (upstream reads them
   after, and a busy host could see a validation of no batch: ``KeyError: 'loss'``).

5. Resume across world sizes (not a PJRT matter: taken with or without PJRT): the saved
   position is translated from the world size it was saved at to this run's
   (models/roberta/resume.py, installed by :func:`main` after fairseq_cli.train set up fairseq's
   logging, and in every spawned replica).

Diagnostics (tests, benchmarks; off unless set): ``TPUBUILD_TRACE=FILE`` appends one JSON line
per training step of every replica: ``pid``, ``rank``, ``update`` (after the step), ``ids`` (the
dataset ids of the samples trained in it, read on the host before the transfer), ``compiles``
(XLA compilations so far, torch_xla's ``CompileTime`` metric) and ``step_compiles`` (those the
step itself caused). ``tests/models/test_roberta_xla.py`` asserts on it.
"""

from __future__ import annotations

import collections
import copy
import json
import math
import os
import sys
import threading
from typing import Any

_INSTALLED = False
_TRACE_LOCK = threading.Lock()


def pjrt_available() -> bool:
    """torch_xla with the ``torch_xla.runtime`` API (2.x) and a PJRT device configured."""
    if not os.environ.get("PJRT_DEVICE"):
        return False
    try:
        import torch_xla.runtime  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------- 2. ordinals and world size

class _XlaModelView:
    """``torch_xla.core.xla_model`` as fairseq's ``distributed.utils`` expects it (XRT names)."""

    def __init__(self, xm: Any, xr: Any) -> None:
        self._xm = xm
        self._xr = xr

    def __getattr__(self, name: str) -> Any:
        return getattr(self._xm, name)

    def xrt_world_size(self) -> int:
        return self._xr.world_size()

    def get_ordinal(self) -> int:
        return self._xr.global_ordinal()

    def get_local_ordinal(self) -> int:
        return self._xr.local_ordinal()


# ---------------------------------------------------------------- 3. memory statistics

def _memory_info(original: Any) -> Any:
    def get_memory_info(device: Any = None) -> dict[str, Any]:
        try:
            info = dict(original(device))
        except Exception:  # noqa: BLE001 - a runtime without memory statistics (CPU)
            info = {}
        if "kb_free" not in info:
            limit = info.get("bytes_limit", 0)
            used = info.get("bytes_used", 0)
            info["kb_total"] = limit // 1024
            info["kb_free"] = max(limit - used, 0) // 1024
        return info

    get_memory_info.__wrapped__ = original  # type: ignore[attr-defined]
    return get_memory_info


# ---------------------------------------------------------------- 1. spawn

def _plain(cfg: Any) -> Any:
    """cfg as plain containers: it crosses to spawned processes by pickle, which fairseq's
    ``ChoiceEnum`` values do not survive. The same conversion fairseq applies to the cfg it
    stores in checkpoints and rebuilds on load."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)


def _rebuilt(plain: Any) -> Any:
    from fairseq.dataclass.utils import omegaconf_no_object_check
    from omegaconf import OmegaConf

    with omegaconf_no_object_check():
        cfg = OmegaConf.create(plain)
    OmegaConf.set_struct(cfg, True)
    return cfg


def _replica_main(index: int, main: Any, plain_cfg: Any, kwargs: dict[str, Any]) -> None:
    """One replica (process, or one device thread of it): its own cfg, then fairseq's
    distributed_main, which writes this replica's rank and device into that cfg."""
    from fairseq.distributed import utils as distributed_utils

    install()  # a spawned process imported this file as __mp_main__, which already did it
    _install_resume()  # (main() did it in the launched process, not in this one)
    cfg = _rebuilt(copy.deepcopy(plain_cfg))
    distributed_utils.distributed_main(index, main, cfg, copy.deepcopy(kwargs))


def _call_main(original: Any) -> Any:
    def call_main(cfg: Any, main: Any, **kwargs: Any) -> None:
        if not cfg.common.tpu:
            return original(cfg, main, **kwargs)
        import torch
        import torch_xla.distributed.xla_multiprocessing as xmp

        torch.multiprocessing.set_sharing_strategy("file_system")
        xmp.spawn(_replica_main, args=(main, _plain(cfg), kwargs), nprocs=None)
        return None

    call_main.__wrapped__ = original  # type: ignore[attr-defined]
    return call_main


# ---------------------------------------------------------------- 4. read-ahead accounting

def _counters(itr: Any) -> list[Any]:
    """The counting iterators below the one fairseq hands to the loader, outermost first
    (GroupedIterator → the epoch's CountingIterator), through the ``source`` link that
    :class:`_GroupedIterator` adds."""
    chain = []
    while itr is not None and hasattr(itr, "n"):
        chain.append(itr)
        itr = getattr(itr, "source", None)
    return chain


def _sample_ids(item: Any) -> list[int]:
    samples = item if isinstance(item, list) else [item]
    ids: list[int] = []
    for s in samples:
        if isinstance(s, dict) and "id" in s:
            ids.extend(int(i) for i in s["id"].tolist())
    return ids


class _Recorded:
    """What the loader's thread reads: each item, and after it the position of every counter."""

    def __init__(self, itr: Any, counters: list[Any], trace: bool) -> None:
        self._itr = iter(itr)
        self._counters = counters
        self._trace = trace
        self.positions: collections.deque[tuple[tuple[int, ...], list[int]]] = collections.deque()

    def __iter__(self) -> _Recorded:
        return self

    def __next__(self) -> Any:
        item = next(self._itr)
        ids = _sample_ids(item) if self._trace else []
        self.positions.append((tuple(c.n for c in self._counters), ids))
        return item

    def __len__(self) -> int:
        return len(self._counters[0]) if self._counters else 0


class _Consumed:
    """What training iterates: the device loader's items, in order; taking one marks the
    counters' positions recorded for it as consumed."""

    def __init__(self, loader: Any, recorded: _Recorded, counters: list[Any]) -> None:
        self._loader = iter(loader)
        self._recorded = recorded
        self._counters = counters
        self.last_ids: list[int] = []

    def __iter__(self) -> _Consumed:
        return self

    def __next__(self) -> Any:
        item = next(self._loader)
        positions, self.last_ids = self._recorded.positions.popleft()
        for counter, n in zip(self._counters, positions):
            counter.consumed = n
        _STATE.last_ids = self.last_ids
        return item


class _State(threading.local):
    last_ids: list[int] = []


_STATE = _State()


def tpu_data_loader(itr: Any) -> Any:
    """fairseq.utils.tpu_data_loader with consumed-position accounting (see module docstring)."""
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl
    from fairseq.data import iterators

    xm.rendezvous("tpu_data_loader")  # wait for all workers
    torch_xla.sync()
    device = torch_xla.device()
    counters = _counters(itr)
    for counter in counters:
        counter.consumed = counter.n  # before the loader's thread starts reading
    # The position and length are read before the loader's thread starts: that thread advances
    # itr.n as it reads ahead, and upstream's tpu_data_loader reads them after it has started, so
    # a busy host could start the wrapper at the end (a validation of no batch: KeyError 'loss').
    start, total = getattr(itr, "n", 0), len(itr)
    recorded = _Recorded(itr, counters, trace=bool(os.environ.get("TPUBUILD_TRACE")))
    loader = pl.ParallelLoader(recorded, [device]).per_device_loader(device)
    return iterators.CountingIterator(_Consumed(loader, recorded, counters), start=start, total=total)


def _position(itr: Any) -> int:
    return getattr(itr, "consumed", itr.n)


def _patch_epoch_iterator(iterators: Any) -> None:
    cls = iterators.EpochBatchIterator

    def iterations_in_epoch(self: Any) -> int:
        """The number of batches of the current epoch that were trained (not only loaded)."""
        if self._cur_epoch_itr is not None:
            return _position(self._cur_epoch_itr)
        if self._next_epoch_itr is not None:
            return _position(self._next_epoch_itr)
        return 0

    def end_of_epoch(self: Any) -> bool:
        """Whether every batch of the current epoch was trained (not only loaded)."""
        itr = self._cur_epoch_itr
        return _position(itr) >= itr.total

    cls.iterations_in_epoch = property(iterations_in_epoch)
    cls.end_of_epoch = end_of_epoch

    class GroupedIterator(iterators.GroupedIterator):
        """Upstream's, remembering the iterator it groups (``source``) for the accounting."""

        def __init__(self, iterable: Any, chunk_size: int, skip_remainder_batch: bool = False) -> None:
            super().__init__(iterable, chunk_size, skip_remainder_batch=skip_remainder_batch)
            self.source = iterable

    iterators.GroupedIterator = GroupedIterator


# ---------------------------------------------------------------- diagnostics

def _trace_train_step(cls: Any) -> None:
    original = cls.train_step

    def train_step(self: Any, samples: Any, raise_oom: bool = False) -> Any:
        path = os.environ.get("TPUBUILD_TRACE")
        if not path:
            return original(self, samples, raise_oom=raise_oom)
        before = _compiles()
        out = original(self, samples, raise_oom=raise_oom)
        after = _compiles()
        import torch_xla.runtime as xr

        line = json.dumps({"pid": os.getpid(), "rank": xr.global_ordinal(), "update": self.get_num_updates(),
                           "ids": list(_STATE.last_ids), "compiles": after, "step_compiles": after - before})
        with _TRACE_LOCK, open(path, "a") as f:
            f.write(line + "\n")
        return out

    cls.train_step = train_step


def _compiles() -> int:
    import torch_xla.debug.metrics as met

    data = met.metric_data("CompileTime")
    return int(data[0]) if data else 0


# ---------------------------------------------------------------- install

def install() -> bool:
    """Patch fairseq for PJRT in this process; idempotent. False when PJRT is not in use."""
    global _INSTALLED
    if _INSTALLED:
        return True
    if not pjrt_available():
        return False
    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr
    from fairseq import trainer, utils
    from fairseq.data import iterators
    from fairseq.distributed import utils as distributed_utils

    distributed_utils.xm = _XlaModelView(xm, xr)
    distributed_utils.call_main = _call_main(distributed_utils.call_main)
    if not hasattr(xm.get_memory_info, "__wrapped__"):
        xm.get_memory_info = _memory_info(xm.get_memory_info)
    utils.tpu_data_loader = tpu_data_loader
    _patch_epoch_iterator(iterators)
    _trace_train_step(trainer.Trainer)
    _INSTALLED = True
    return True


def main() -> None:
    from fairseq_cli import train  # first: it configures fairseq's logging

    _install_resume()
    train.cli_main()


def _install_resume() -> None:
    """models/roberta/resume.py, beside this file (on sys.path when this file runs as a script)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import resume

    resume.install()


install()

if __name__ == "__main__":
    sys.argv[0] = "fairseq-train"
    main()
