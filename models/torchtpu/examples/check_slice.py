"""What the offline tests cannot prove, checked on a real TPU slice (docs/models.md "TorchTPU: what
is not yet proven"). Run it on every host exactly as a training runs:

    tpubuild run --runtime torchtpu --values VALUES -- models/torchtpu/examples/check_slice.py
    tpubuild logs --model torchtpu --host 0 --values VALUES   # a PASS or FAIL line per check, per host

(``VALUES``: your torchtpu values.env, e.g. models/torchtpu/examples/values.env; the script must be
under its folder.)

Each host prints ``tpubuild-check <name> PASS|FAIL <detail>`` and exits 1 when a check failed.
"""

from __future__ import annotations

import os
import sys
import time

import torch
import torch.distributed as dist

results: list[bool] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append(ok)
    print(f"tpubuild-check {name} {'PASS' if ok else 'FAIL'} node={os.environ.get('NODE_RANK')} {detail}", flush=True)


def main() -> int:
    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    check("accelerator-is-tpu", acc is not None and acc.type == "tpu", f"accelerator={acc}")
    if acc is None or acc.type != "tpu":
        return 1
    dev = torch.device("tpu", int(os.environ.get("LOCAL_RANK", "0")))
    x = torch.arange(8, dtype=torch.float32, device=dev)
    check("tensor-on-tpu", float((x * 2).sum().cpu()) == 56.0, f"device={x.device}")
    # our NODE_RANK (hostname order) against the rank torch-tpu derives from the chip coordinates
    from torch_tpu._internal.distributed import distributed as tpu_dist  # torch-tpu 0.2.0 internals

    coords = tpu_dist._query_local_device_coords()
    topo_rank = tpu_dist._calculate_topological_node_rank(coords, os.environ.get("TORCH_TPU_TOPOLOGY"), None)
    check("node-rank-matches-chip-coordinates", str(topo_rank) == os.environ["NODE_RANK"],
          f"coords={coords} topological={topo_rank} launcher={os.environ['NODE_RANK']}")
    t0 = time.time()
    dist.init_process_group(dist.get_default_backend_for_device(dev))  # the tpu process group, handshakes
    check("process-group", dist.get_world_size() == int(os.environ["WORLD_SIZE"]),
          f"backend={dist.get_backend()} world={dist.get_world_size()} in {time.time() - t0:.1f}s")
    one = torch.ones(4, device=dev)
    dist.all_reduce(one)
    check("all-reduce-across-hosts", float(one[0].cpu()) == dist.get_world_size(), f"sum={float(one[0].cpu())}")
    dist.destroy_process_group()
    import tpu_observe  # models/torchtpu/tpu_observe.py, on PYTHONPATH under train.sh

    check("profiler-server", tpu_observe.serve() > 0 or int(os.environ.get("LOCAL_RANK", "0")) != 0,
          "then: tpubuild profile --host 0 while a training runs")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
