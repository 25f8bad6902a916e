"""Give fairseq's data code what numpy 2 removed (``np.compat.long``, ``np.percentile``'s ``interpolation``
keyword), so that fairseq's tasks run on numpy 1.x and 2.x; on a numpy that has them nothing is changed."""

import inspect
import types

import numpy


def get_buckets(sizes, num_buckets):
    """fairseq's ``data_utils.get_buckets``, with ``method="lower"`` where it says ``interpolation="lower"``."""
    return numpy.unique(numpy.percentile(sizes, numpy.linspace(0, 100, num_buckets + 1), method="lower")[1:])


def install():
    """Mend what this numpy lacks; returns the names this call mended."""
    mended = []
    if not hasattr(numpy, "compat"):
        compat = types.ModuleType(
            "numpy.compat", "numpy 1.x's numpy.compat, as far as fairseq reads it (set by the plugin's mends)"
        )
        compat.long = numpy.int64  # numpy 1's compat.long is Python's int: int64 as a dtype on 64-bit Linux
        numpy.compat = compat  # an attribute, not a module: a probe for numpy 1 (import numpy.compat) still fails
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
