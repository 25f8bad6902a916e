"""Give fairseq's data code what numpy 2 removed, so that fairseq's tasks run on numpy 1.x and 2.x.

fairseq 0.12 (``fairseq-fixed`` 0.12.3.1 too) targets numpy 1 and reads two things that
numpy 2 lacks:

- ``np.compat.long``, a Python-2 alias that numpy 2.0 deleted with the whole ``numpy.compat``
  module: in ``TokenBlockDataset`` with ``--sample-break-mode eos`` (fairseq's
  ``language_modeling`` task) and in ``LanguagePairDataset`` with ``num_buckets > 0`` (the
  ``translation`` task's ``--num-batch-buckets``). numpy 2 stops both with ``AttributeError:
  module 'numpy' has no attribute 'compat'``.
- ``np.percentile(..., interpolation="lower")`` in ``data_utils.get_buckets`` (the same
  ``--num-batch-buckets``): numpy 2.4 removed the keyword (renamed ``method`` in 1.22), so the
  bucketing stops with ``TypeError: percentile() got an unexpected keyword argument
  'interpolation'`` before it reaches ``np.compat``.

Why not simply pin numpy<2: on an image whose scipy and scikit-learn are built for numpy 2,
``import sklearn`` fails once numpy is downgraded (``module 'numpy' has no attribute 'long'``),
and fairseq imports scikit-learn at start-up, so every command fails.

Importing this module (``alm_plugin/__init__.py`` does it first, so ``--user-dir alm_plugin`` is
enough) mends only what is missing:

- where numpy has no ``compat``, sets ``numpy.compat`` to a small module holding
  ``long = numpy.int64`` (what numpy 1.x's ``numpy.compat.long``, Python's ``int``, means as a
  dtype on 64-bit Linux). It is an attribute only, not an importable ``numpy.compat``: a library
  that probes for numpy 1 with ``import numpy.compat`` is not misled;
- where ``numpy.percentile`` has no ``interpolation`` keyword, replaces ``get_buckets`` in
  ``fairseq.data.data_utils`` and ``fairseq.data.bucket_pad_length_dataset`` by the same
  computation with ``method="lower"``.

On numpy 1.x (and 2.0 to 2.3 for the second) nothing is changed. fairseq run without the plugin
is left as it is.
"""

import inspect
import types

import numpy


def get_buckets(sizes, num_buckets):
    """fairseq's ``data_utils.get_buckets``, with ``method="lower"`` where it says ``interpolation="lower"``."""
    return numpy.unique(numpy.percentile(sizes, numpy.linspace(0, 100, num_buckets + 1), method="lower")[1:])


def install():
    """Mend what this numpy lacks (see the module's docstring); returns what this call mended."""
    mended = []
    if not hasattr(numpy, "compat"):
        compat = types.ModuleType(
            "numpy.compat", "numpy 1.x's numpy.compat, as far as fairseq reads it (set by the plugin's mends)"
        )
        compat.long = numpy.int64
        numpy.compat = compat
        mended.append("numpy.compat.long")
    if "interpolation" not in inspect.signature(numpy.percentile).parameters:
        from fairseq.data import bucket_pad_length_dataset, data_utils

        for module in (data_utils, bucket_pad_length_dataset):
            if module.get_buckets is not get_buckets:
                get_buckets.fairseq_original = module.get_buckets
                module.get_buckets = get_buckets
                mended.append(f"{module.__name__}.get_buckets")
    return mended


install()
