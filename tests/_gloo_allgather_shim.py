"""``python -m lmms_eval`` for two CPU (gloo) ranks on lmms-eval 0.6.x, whose torchrun path gathers a
0-d tensor with ``all_gather_into_tensor`` (NCCL accepts it, gloo does not; fixed upstream in 0.7).
Tests only: our code is unchanged; lmms-eval's request-count gather gets a 1-element tensor. On 0.7 the
input is already 1-d and nothing changes."""

import runpy
import sys

import torch.distributed as dist

_gather = dist.all_gather_into_tensor


def all_gather_into_tensor(output, input, *args, **kwargs):
    return _gather(output, input.reshape(1) if input.dim() == 0 else input, *args, **kwargs)


dist.all_gather_into_tensor = all_gather_into_tensor
sys.argv[0] = "lmms-eval"
runpy.run_module("lmms_eval", run_name="__main__", alter_sys=True)
