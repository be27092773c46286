"""Array helpers shared by the pipeline's stages."""

from __future__ import annotations

import numpy as np

# numpy sorts integers of at most 16 bits by counting (a radix sort), in a time linear in
# their number: `stable_order` sorts values of up to two such digits that way
RADIX_BITS = 32


def distinct(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)` — the distinct values, ascending — of integers, by a sort. Since
    numpy 2.3, `np.unique` of integers without its other outputs hashes them, which is
    many times slower than sorting once the distinct values are many (measured here with
    numpy 2.4: 10M int32 of 10M possible values, 9.8 s against 0.14 s)."""
    if values.dtype.kind not in "iub":
        raise TypeError(f"distinct takes integers, not {values.dtype}")
    return distinct_sorted(np.sort(values, axis=None))


def distinct_sorted(ordered: np.ndarray) -> np.ndarray:
    """The distinct values of `ordered`, a 1-d array sorted ascending: the first of each
    run."""
    if ordered.shape[0] < 2:
        return ordered
    first = np.empty(ordered.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    found: np.ndarray = ordered[first]
    return found


def union_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct values of two ascending arrays, ascending: a stable sort of the two
    one after the other merges their runs."""
    return distinct_sorted(np.sort(np.concatenate((a, b)), kind="stable"))


def stable_order(values: np.ndarray) -> np.ndarray:
    """`np.argsort(values, kind="stable")`, several times faster for non-negative
    integers. Up to RADIX_BITS bits, by a radix sort: numpy's stable sort of the low 16
    bits (which counts), then of the high ones in that order. Wider, each value shifted up
    and its position put in the low bits makes keys that are all distinct, so a plain
    (unstable, vectorised) sort of them gives the stable order, which is unique. numpy's
    own stable sort otherwise: other types, negative values, or value and position not
    fitting in 63 bits together."""
    if len(values) == 0 or values.dtype.kind not in "iu" or int(values.min()) < 0:
        order: np.ndarray = np.argsort(values, kind="stable")
        return order
    bits = int(values.max()).bit_length()
    if bits <= RADIX_BITS:
        return _radix_order(values, bits)
    position_bits = max(len(values) - 1, 1).bit_length()
    if bits + position_bits > 63:
        order = np.argsort(values, kind="stable")
        return order
    key = values.astype(np.int64)
    key <<= position_bits
    key |= np.arange(len(values), dtype=np.int64)
    key.sort()
    key &= (1 << position_bits) - 1
    return key


def _radix_order(values: np.ndarray, bits: int) -> np.ndarray:
    """The stable order of non-negative integers of at most 32 `bits`: by their low 16
    bits, then stably by the rest (a least-significant-digit radix sort); each digit in
    the narrowest type that holds it, since numpy counts 8 bits at a time."""
    low = values.astype(np.uint8 if bits <= 8 else np.uint16)  # wraps: the low bits
    order: np.ndarray = np.argsort(low, kind="stable")
    del low
    if bits <= 16:
        return order
    high = np.empty(len(values), dtype=np.uint8 if bits <= 24 else np.uint16)
    np.right_shift(values, 16, out=high, casting="unsafe")  # no wider copy on the way
    step = np.argsort(high[order], kind="stable")
    del high
    ordered: np.ndarray = order[step]
    return ordered


def visit_pairs(
    user: np.ndarray, location: np.ndarray, n_locations: int, per_point: bool = True
) -> tuple[np.ndarray | None, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The distinct (user, location) pairs of points sorted by user, sorted by user then
    location, with the visits (points) of each: (user, location, count), int32 each;
    and when `per_point`, each point's pair's visits. What `np.unique` of the pairs' keys
    with inverse and counts gives: the points come sorted by user, so their keys come in
    runs of one user each, which a stable sort (timsort) merges in a fraction of the time
    a sort from scratch takes."""
    n = max(n_locations, 1)
    key = user.astype(np.int64)
    key *= n
    key += location
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    del key
    first = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(starts, append=len(ordered))
    key = ordered[starts]
    del ordered, first, starts
    pairs = ((key // n).astype(np.int32), (key % n).astype(np.int32), counts.astype(np.int32))
    if not per_point:
        return None, pairs
    pair_count = np.empty(len(order), dtype=np.int64)
    pair_count[order] = np.repeat(counts, counts)
    return pair_count, pairs


GAMMA = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's increment: the golden ratio


def mixed(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer of uint64 values (in place; wrapping products): a hash of
    each, as evenly spread over 64 bits as the generator's outputs."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z
