"""alm_plugin: attention- and cache-based recurrent language models for fairseq.

Use it with ``--user-dir alm_plugin``; importing the package registers everything.
"""
from . import checkpoint_safety, criterions, models, shallow_fusion, tasks  # noqa: F401
