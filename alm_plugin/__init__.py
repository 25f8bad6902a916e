"""alm_plugin: attention- and cache-based recurrent language models for fairseq.

Use it with ``--user-dir alm_plugin``; importing the package registers everything.
"""
from . import checkpoint_safety, criterions, errors, models, shallow_fusion, tasks  # noqa: F401

errors.install()  # our refusals end fairseq's CLIs in one line, without a traceback
