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
    distinct keys in the order of its categories. Arrow numbers the keys (its hash table
    of 64-bit integers is faster than pandas'); the distinct ones are then sorted."""
    encoded = pa.array(keys, type=pa.uint64()).dictionary_encode()
    distinct = encoded.dictionary.to_numpy()
    order = np.argsort(distinct)
    distinct = distinct[order]
    matrix = distinct.astype(">u8").view(np.uint8).reshape(-1, PACKED_BYTES)
    used = matrix != 0  # the padding: no id holds a NUL
    offsets = np.zeros(len(distinct) + 1, dtype=np.int32)
    np.cumsum(used.sum(axis=1), out=offsets[1:])
    text = pa.StringArray.from_buffers(
        len(distinct), pa.py_buffer(offsets), pa.py_buffer(matrix[used].tobytes())
    )
    codes = _in_order(encoded.indices.to_numpy(), order)
    return pd.Categorical.from_codes(codes, categories=_strings(text)), distinct
