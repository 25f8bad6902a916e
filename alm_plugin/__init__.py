"""alm_plugin: attention- and cache-based recurrent language models for fairseq.

Use it with ``--user-dir alm_plugin``; importing the package registers everything.
"""

import logging

# fairseq's text_to_speech task says "Please install tensorboardX" (INFO) when fairseq.tasks is
# imported: chatter above every tool's output, about a package nothing here uses
logging.getLogger("fairseq.tasks.text_to_speech").setLevel(logging.WARNING)

from .mends import numpy_compat  # noqa: E402,F401  (first: fairseq's data code reads np.compat, gone in numpy 2)

# isort: split
from . import criterions, errors, models, tasks  # noqa: E402,F401
from .mends import checkpoint_safety, device, shallow_fusion  # noqa: E402,F401

errors.install()  # our refusals end fairseq's CLIs in one line, without a traceback
device.install()  # --bf16 refused in one line; --cpu trains on a machine with a GPU
