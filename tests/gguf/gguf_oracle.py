"""Compare what ds4kit's GGUFFile reads with what gguf-py's GGUFReader reads."""
from __future__ import annotations

import numpy as np
import gguf
from gguf import GGUFValueType as V

from ds4kit import _engine
import gguf_fixtures as fx


def oracle_type_name(field) -> str:
    """gguf-py's field.types ([ARRAY, ARRAY, INT32] for nested) as our type string."""
    names = [t.name for t in field.types]
    out = names[-1]
    for _ in names[:-1]:
        out = f"ARRAY[{out}]"
    return out


def flatten(value) -> list:
    """Nested lists/arrays to a flat python list, the shape gguf-py's contents() returns."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [x for item in value for x in flatten(item)]
    return [value]


def assert_matches_gguf_py(path) -> _engine.GGUFFile:
    """Header, every key (order, type, value) and every tensor (name, type, shape,
    size, offset, bytes) must agree with gguf-py."""
    f = _engine.GGUFFile(str(path))
    r = gguf.GGUFReader(str(path))
    assert (f.alignment, f.data_offset) == (r.alignment, r.data_offset)
    ours = f.metadata
    # gguf-py lists the three header fields (GGUF.version, ...) as fields too.
    theirs = {k: v for k, v in r.fields.items() if not k.startswith("GGUF.")}
    assert list(ours) == list(theirs), "keys in file order"
    for key, field in theirs.items():
        if field.types == [V.ARRAY]:  # gguf-py drops the element type of an empty array
            assert f.metadata_type(key).startswith("ARRAY[") and len(ours[key]) == 0 == len(field.contents()), key
            continue
        if f.metadata_type(key).endswith("[MIXED]]"):
            # gguf-py types a nested array by its first inner array and misreads the
            # rest when inner types differ; tests check those against the written values.
            continue
        assert f.metadata_type(key) == oracle_type_name(field), key
        expected = field.contents()
        got = ours[key]
        if field.types[0] == V.ARRAY and len(field.types) == 2 and field.types[1] != V.STRING:
            assert isinstance(got, np.ndarray) and got.dtype == fx.NP_DTYPES[field.types[1]], key
            np.testing.assert_array_equal(got, np.array(expected, dtype=got.dtype), err_msg=key)
        elif field.types[0] == V.ARRAY and len(field.types) > 2:
            assert flatten(got) == expected, key
        elif isinstance(expected, float):
            assert type(got) is float and (got == expected or (got != got and expected != expected)), key
        else:
            assert got == expected and type(got) is type(expected), key
    assert [t.name for t in f.tensors] == [t.name for t in r.tensors]
    for ours_t, theirs_t in zip(f.tensors, r.tensors):
        assert ours_t.type_id == int(theirs_t.tensor_type)
        assert ours_t.type_name == theirs_t.tensor_type.name
        assert list(ours_t.shape) == [int(x) for x in theirs_t.shape]
        assert ours_t.n_elements == theirs_t.n_elements
        assert ours_t.nbytes == theirs_t.n_bytes
        assert ours_t.abs_offset == theirs_t.data_offset
        assert ours_t.offset == theirs_t.data_offset - f.data_offset
        assert f.tensor_data(ours_t.name).tobytes() == np.asarray(theirs_t.data).tobytes(), ours_t.name
    return f
