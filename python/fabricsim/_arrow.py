"""Arrow arrays and tables made and read without pandas.

``pyarrow.array`` and ``Array.to_numpy`` ask pyarrow's pandas shim whether their
argument is a pandas object, which imports pandas: half a second of a fresh
interpreter's start, paid by every worker of a sweep that only runs points and writes
their Parquet files. Building arrays from their buffers (the core hands over raw
little-endian columns) and reading numbers back the same way never touches the shim.
The tables carry the pandas metadata ``DataFrame.to_parquet`` would write, so that
``pd.read_parquet`` and ``Table.to_pandas`` give the dtypes pandas users expect.
"""

from __future__ import annotations

import json
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

#: How pandas describes a column in its Parquet metadata: pandas_type, numpy_type (for
#: an extension dtype, the name that makes the reader give it back) and metadata.
Described = Tuple[str, str, Any]

#: pandas' nullable integers ("none" is null).
NULLABLE_INT: Described = ("int64", "Int64", None)
#: pandas' ``string`` dtype.
STRING: Described = ("object", "string", None)

#: Arrow's primitive types by the numpy dtypes the core and the sweep table use.
_TYPES = {np.dtype(t): pa.from_numpy_dtype(np.dtype(t))
          for t in ("<u1", "<u2", "<u4", "<u8", "<i1", "<i2", "<i4", "<i8", "<f8", "bool")}


def _validity(valid: Optional[np.ndarray]) -> Optional[pa.Buffer]:
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def numbers(values: np.ndarray, valid: Optional[np.ndarray] = None) -> pa.Array:
    """A primitive Arrow array over ``values`` (no copy when it is contiguous), null
    where ``valid`` is False."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(values), [_validity(valid), data])
    return pa.Array.from_buffers(_TYPES[values.dtype], len(values), [_validity(valid), pa.py_buffer(values)])


def strings(values: Sequence[Optional[str]]) -> pa.Array:
    """A large-string Arrow array (pandas' ``string`` dtype writes large strings);
    None is null."""
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    return pa.Array.from_buffers(pa.large_string(), len(encoded),
                                 [_validity(valid), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def category(codes: np.ndarray, names: List[str]) -> Tuple[pa.Array, Described]:
    """A dictionary array (pandas' category) of ``names`` by ``codes``, with codes in
    the narrowest integer pandas would keep them in."""
    narrow = next(np.dtype(t) for t in ("<i1", "<i2", "<i4", "<i8") if len(names) < np.iinfo(np.dtype(t)).max)
    dictionary = strings(names).cast(pa.string())
    array = pa.DictionaryArray.from_arrays(numbers(codes.astype(narrow)), dictionary)
    return array, ("categorical", narrow.name, {"num_categories": len(names), "ordered": False})


def floats(column: Any) -> np.ndarray:
    """A numeric Arrow column (array or chunked) as float64, NaN where null."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        dtype = next(d for d, t in _TYPES.items() if t == chunk.type)
        validity, data = chunk.buffers()[:2]
        if dtype == np.bool_:
            raise TypeError("floats: a boolean column")
        values = np.frombuffer(data, dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize).astype(float)
        if validity is not None and chunk.null_count:
            bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
            values[~bits[chunk.offset:chunk.offset + len(chunk)].astype(bool)] = np.nan
        parts.append(values)
    return np.concatenate(parts) if parts else np.array([], dtype=float)


def table(columns: Sequence[Tuple[str, pa.Array, Described]]) -> pa.Table:
    """A table of named columns with the metadata ``DataFrame.to_parquet`` writes (no
    index)."""
    doc = {
        "index_columns": [], "column_indexes": [],
        "columns": [{"name": name, "field_name": name, "pandas_type": d[0], "numpy_type": d[1], "metadata": d[2]}
                    for name, _, d in columns],
        "attributes": {}, "creator": {"library": "pyarrow", "version": pa.__version__},
    }
    arrow = pa.Table.from_arrays([a for _, a, _ in columns], names=[n for n, _, _ in columns])
    return arrow.replace_schema_metadata({"pandas": json.dumps(doc)})


def described(values: np.ndarray) -> Described:
    """How pandas describes a plain numpy column."""
    return (values.dtype.name, values.dtype.name, None)
