"""Keep freed memory in the process for the test-time loops that allocate the same large CPU tensors each
step (dynamic evaluation's output-layer gradient, the cache grid's score blocks), so that each step reuses
the blocks rather than faulting in fresh pages."""

import ctypes
import os

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
LARGEST_HEAP_BLOCK = 32 << 20  # glibc's ceiling for the mmap threshold on 64-bit
KEPT_FREE = 1 << 30  # free heap kept before it is trimmed back to the kernel
OFF = "ALM_RELEASE_FREED_MEMORY"  # =1: leave glibc's defaults (a smaller resident set, slower passes)


def keep_freed_memory() -> bool:
    """Serve blocks up to ``LARGEST_HEAP_BLOCK`` from the heap and keep up to ``KEPT_FREE`` of it free
    for reuse; returns whether it applied (not where the C library is not glibc, or with
    $ALM_RELEASE_FREED_MEMORY=1)."""
    if os.environ.get(OFF) == "1":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows): nothing to tune
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_HEAP_BLOCK)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT_FREE))
