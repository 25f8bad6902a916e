"""Let fairseq checkpoints load under torch's safe loading (``weights_only=True``).

torch >= 2.6 refuses to unpickle anything but tensors and plain containers unless the type
is allow-listed. fairseq checkpoints also hold an ``argparse.Namespace`` (the legacy
``args``, and the config of models such as ``lstm_lm``). We allow exactly the types found
in fairseq checkpoints, instead of turning the check off for every file
(``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``).
"""
import argparse

import torch

SAFE_CHECKPOINT_TYPES = [argparse.Namespace]

torch.serialization.add_safe_globals(SAFE_CHECKPOINT_TYPES)
