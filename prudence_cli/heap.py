"""The C heap of a large assessment.

An assessment of millions of people allocates and frees arrays of tens to hundreds of
megabytes one after the other: read, project, sort, count, measure, write. glibc's malloc
hands freed heap memory back to the system as soon as its top grows past a few hundred
kilobytes, and the next array takes it back one page fault at a time: at a million people
(10M GPS rows) about 340,000 faults, 3 s of the process's 8.4 s in the kernel on a 2-core
virtual machine. Keeping up to `PAD` bytes of freed memory at the heap's top for the next
arrays halves the faults (measured with benchmarks/end_to_end.py's data: 8.3-8.5 s →
6.9-7.2 s, kernel time 3.1-3.3 → 1.7-2.0 s). The memory kept counts in the process's
resident size: its peak went from 1.31 to 1.39-1.41 GB with 384 MB, to 1.54 GB with 512 MB
(no faster), so 384 MB it is.

Only a glibc process does this (`mallopt(M_TOP_PAD)`); elsewhere, or when the user tunes
malloc through its environment variables, nothing changes.
"""

from __future__ import annotations

import os
import sys

PAD = 384 << 20  # bytes of freed memory kept at the heap's top
WORTH_IT = 64 << 20  # input bytes from which an assessment allocates enough to gain
_M_TOP_PAD = -2  # glibc's malloc.h
_USER_TUNING = ("MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")


def retain_freed_memory(pad: int = PAD) -> bool:
    """Let glibc's malloc keep `pad` bytes of freed memory for the next allocations;
    whether it now does (False: not glibc, or the user's own malloc tuning stands)."""
    if not sys.platform.startswith("linux") or not _is_glibc() or _user_tuned():
        return False
    import ctypes  # here: only a large assessment pays for its import

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library with mallopt in this process
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_TOP_PAD, pad))


def _user_tuned() -> bool:
    return any(name in os.environ for name in _USER_TUNING) or "glibc.malloc" in os.environ.get(
        "GLIBC_TUNABLES", ""
    )


def _is_glibc() -> bool:
    """musl and others also export a `mallopt`, which does nothing or something else."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):  # the name is unknown here
        return False
