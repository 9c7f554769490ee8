"""Minimal NCCL all-reduce across all visible GPUs (one process per GPU), printing timings.

Used to record real NCCL_DEBUG=INFO lines for the P2P/NCCL verdict fixtures. Launch with
`torchrun --nproc-per-node N nccl_allreduce_probe.py`.
"""
import os
import time

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    start = time.monotonic()
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    tensor = torch.full((64 * 1024 * 1024,), float(rank + 1), device="cuda")
    dist.all_reduce(tensor)
    torch.cuda.synchronize()
    expected = world * (world + 1) / 2
    ok = bool(torch.all(tensor == expected).item())
    print(f"PROBE rank={rank} world={world} init_and_allreduce_s={time.monotonic() - start:.3f} sum_ok={ok}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
