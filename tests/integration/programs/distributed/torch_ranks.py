"""A 2-rank torch.distributed loop on the CPU (gloo), as torchrun starts it: each rank allocates a known
amount on its own line (rank r: (r + 1) * 24 MiB kept), and the ranks all-reduce a tensor."""
import os

import torch
import torch.distributed as dist


def keep(rank):
    return [bytearray(1 << 20) for _ in range((rank + 1) * 24)]   # RANK_LINE: rank r keeps (r + 1) * 24 MiB


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    held = keep(rank)
    t = torch.ones(1000) * (rank + 1)
    for _ in range(3):
        dist.all_reduce(t)
    dist.barrier()
    print(f"rank {rank}/{world} sum {float(t[0]):.0f} held {len(held)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
