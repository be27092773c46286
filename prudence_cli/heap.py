"""The C heap of a large assessment.

An assessment of millions of people allocates and frees arrays of tens to hundreds of
megabytes one after the other: read, project, sort, count, measure, write. glibc's malloc
hands freed heap memory back to the system as soon as its top grows past a few hundred
kilobytes, and maps each large array from the system alone; either way the next array
takes its memory back one page fault at a time: at a million people (10M GPS rows) about
340,000 faults, 3 s of the process's 8 s in the kernel on a 2-core virtual machine.

So malloc keeps up to `PAD` bytes of freed memory at the heap's top for the next arrays,
and maps alone only the blocks of `MMAP_THRESHOLD` bytes or more (setting the pad turns
off glibc's own tuning of that threshold, which would otherwise stay at its first
128 kB). Measured with benchmarks/end_to_end.py's data (1M people), as `prudence assess`
sets them: 6.6-7.7 s and a peak of 1.46-1.49 GB, against 8.0-8.6 s and 1.30-1.32 GB with
nothing set (kernel time 3.3 → 1.5-2.0 s). A smaller pad (64 or 128 MB) peaked as high;
a higher threshold (16-32 MB) or a larger pad with it, at 1.50-1.71 GB. The same sizes
given to glibc in the environment instead (MALLOC_TOP_PAD_=268435456
MALLOC_MMAP_THRESHOLD_=4194304) ran as fast and peaked at only 1.33 GB — why setting them
at run time costs 0.15 GB more is not understood; a user short of memory can set them so
(a user's own setting stands).

Only `prudence assess` does this, for its own process (a program that calls the library
keeps its malloc as it is), and only with glibc (`mallopt`); elsewhere, or when the user
tunes malloc through its environment variables, nothing changes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

PAD = 256 << 20  # bytes of freed memory kept at the heap's top
MMAP_THRESHOLD = 4 << 20  # bytes from which an allocation is mapped alone
WORTH_IT = 64 << 20  # input bytes from which an assessment allocates enough to gain
# glibc's malloc.h
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
_USER_TUNING = ("MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")


def worth_it(paths: Iterable[Path]) -> bool:
    """Whether an input of these files is large enough to gain (a file that cannot be
    read counts for nothing: reading it says why)."""
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total >= WORTH_IT


def retain_freed_memory(pad: int = PAD) -> bool:
    """Let glibc's malloc keep `pad` bytes of freed memory for the next allocations (and
    map alone only those of `MMAP_THRESHOLD` bytes or more); whether it now does (False:
    not glibc, or the user's own malloc tuning stands)."""
    if not sys.platform.startswith("linux") or not _is_glibc() or _user_tuned():
        return False
    import ctypes  # here: only a large assessment pays for its import

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library with mallopt in this process
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TOP_PAD, pad))


def give_back() -> bool:
    """Return the freed memory glibc's malloc keeps at the top of the heap and in its
    free lists to the system (malloc_trim): a long-lived process, such as a Dask worker
    between the steps of a run, then shows only what it holds. Whether it could."""
    if not sys.platform.startswith("linux") or not _is_glibc():
        return False
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    trim(0)
    return True


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
