"""Ids (users, towers, segments) as compact codes, and as pandas Categoricals whose
categories are the ids in sorted order (code point order, as Python compares strings).

Short ids (at most 8 bytes of UTF-8, no NUL) are also packed into one uint64 each, big
end first and padded with zeros: the numbers sort as the strings do, and millions of
them are numbered far faster than the strings are hashed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


class Labels:
    """Original ids as int32 codes, numbered as they come; `categorical` renumbers them
    in sorted order, as a pandas Categorical."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def codes(self, values: np.ndarray) -> np.ndarray:
        local, uniques = pd.factorize(values)
        mapping = np.empty(len(uniques), dtype=np.int32)
        for k, label in enumerate(uniques.tolist()):
            mapping[k] = self.index.setdefault(label, len(self.index))
        codes: np.ndarray = mapping[local]
        return codes

    def categorical(self, codes: np.ndarray) -> pd.Categorical:
        labels = np.array(list(self.index), dtype=object)
        order = np.argsort(labels, kind="stable")
        return pd.Categorical.from_codes(_in_order(codes, order), categories=labels[order])


def arrow_categorical(codes: np.ndarray, labels: pa.Array) -> pd.Categorical:
    """The Categorical `Labels.categorical` gives for distinct string `labels` numbered
    by `codes`, sorted by Arrow: the byte order of UTF-8 is the code point order."""
    order = pc.sort_indices(labels)
    categories = _strings(labels.take(order))
    return pd.Categorical.from_codes(_in_order(codes, order.to_numpy()), categories=categories)


def united(columns: list[pd.Series | pd.Categorical]) -> pd.Categorical:
    """The ids of several files as if they had been read as one: one Categorical whose
    categories are the sorted union of theirs. Each column is a Categorical with sorted
    categories (as `Labels.categorical` gives them), or plain ids (a file without rows)."""
    parts = [_sorted_categorical(column) for column in columns]
    labels = [pa.array(part.categories, type=pa.string()) for part in parts]
    union = pc.unique(pa.concat_arrays(labels))
    union = union.take(pc.sort_indices(union))
    codes = []
    for part, own in zip(parts, labels, strict=True):
        where = pc.index_in(own, value_set=union).to_numpy(zero_copy_only=False)
        codes.append(where.astype(np.int32)[part.codes])
    return pd.Categorical.from_codes(np.concatenate(codes), categories=_strings(union))


def _sorted_categorical(ids: pd.Series | pd.Categorical) -> pd.Categorical:
    if isinstance(ids, pd.Categorical):
        return ids
    if isinstance(ids.dtype, pd.CategoricalDtype):
        return ids.array
    return pd.Categorical(ids.astype(str))


def _in_order(codes: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`codes` of labels renumbered by their place in `order`, the order that sorts them."""
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    renumbered: np.ndarray = rank[codes]
    return renumbered


def _strings(text: pa.Array) -> pd.api.extensions.ExtensionArray | np.ndarray:
    """Arrow strings as pandas keeps Python strings in an Index: its `str` dtype (pandas
    3) takes Arrow's array as it is; without it they become Python objects."""
    dtype = pd.Index(np.array([""], dtype=object)).dtype
    if isinstance(dtype, pd.StringDtype):
        return pd.array(text, dtype=dtype)
    strings: np.ndarray = text.to_numpy(zero_copy_only=False)
    return strings


PACKED_BYTES = 8


def packed_ids(strings: pa.Array) -> np.ndarray | None:
    """uint64 keys of short string ids (see the module docstring); None when some id is
    longer than 8 bytes or holds a NUL."""
    if strings.null_count or not pa.types.is_string(strings.type):
        return None
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)
    offsets = offsets[strings.offset : strings.offset + len(strings) + 1]
    lengths = np.diff(offsets)
    if len(lengths) == 0 or lengths.max() > PACKED_BYTES:
        return None
    data = np.frombuffer(strings.buffers()[2] or b"", dtype=np.uint8)
    body = data[offsets[0] : offsets[-1]]
    if (body == 0).any():
        return None
    matrix = np.zeros((len(lengths), PACKED_BYTES), dtype=np.uint8)
    width = int(lengths[0])
    if (lengths == width).all():  # ids of one length: their bytes are a matrix already
        matrix[:, :width] = body.reshape(-1, width) if width else 0
    else:
        columns = np.arange(PACKED_BYTES)
        inside = columns < lengths[:, None]
        where = np.minimum(offsets[:-1, None] - offsets[0] + columns, max(len(body) - 1, 0))
        matrix[inside] = body[where[inside]]
    keys: np.ndarray = matrix.view(">u8").ravel().astype(np.uint64)
    return keys


def packed_categorical(keys: np.ndarray) -> tuple[pd.Categorical, np.ndarray]:
    """The Categorical `Labels.categorical` gives for the ids packed in `keys`, and the
    distinct keys in the order of its categories."""
    codes, distinct = _numbered(keys)
    order = np.argsort(distinct)
    distinct = distinct[order]
    matrix = distinct.astype(">u8").view(np.uint8).reshape(-1, PACKED_BYTES)
    used = matrix != 0  # the padding: no id holds a NUL
    offsets = np.zeros(len(distinct) + 1, dtype=np.int32)
    np.cumsum(used.sum(axis=1), out=offsets[1:])
    text = pa.StringArray.from_buffers(
        len(distinct), pa.py_buffer(offsets), pa.py_buffer(matrix[used].tobytes())
    )
    categories = _strings(text)
    return pd.Categorical.from_codes(_in_order(codes, order), categories=categories), distinct


_PART_ROWS = 1 << 16  # rows a part holds, about: its table (as many keys at most) fits cache
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: its product spreads keys


def _numbered(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int32 codes of `keys` and the distinct keys they number (`distinct[codes]` gives
    `keys` back), in no particular order.

    One hash table of a million distinct keys misses the CPU's cache at almost every
    row. The rows are grouped instead into up to 256 parts by the top bits of a hash of
    their key (a stable sort of one byte per row), so that equal keys share a part; each
    part is numbered by Arrow's hash table, small enough to stay in cache, and the codes
    go back to the rows' order."""
    bits = min(8, (len(keys) // _PART_ROWS).bit_length())
    if bits == 0:
        encoded = pa.array(keys, type=pa.uint64()).dictionary_encode()
        return encoded.indices.to_numpy(), encoded.dictionary.to_numpy()
    part = ((keys * _FIBONACCI) >> np.uint64(64 - bits)).astype(np.uint8)
    rows = np.argsort(part, kind="stable")
    ends = np.cumsum(np.bincount(part, minlength=1 << bits)).tolist()
    del part
    grouped = keys[rows]
    numbered = np.empty(len(keys), dtype=np.int32)  # the codes of `grouped`
    found: list[np.ndarray] = []
    start = count = 0
    for end in ends:
        encoded = pa.array(grouped[start:end], type=pa.uint64()).dictionary_encode()
        np.add(encoded.indices.to_numpy(), count, out=numbered[start:end])
        found.append(encoded.dictionary.to_numpy())
        start, count = end, count + len(found[-1])
    del grouped
    codes = np.empty(len(keys), dtype=np.int32)
    codes[rows] = numbered
    return codes, np.concatenate(found)
