"""llama.cpp's own GGUF reader (ggml's gguf.c, shipped in llama-cpp-python's
libggml-base) through ctypes: a second independent oracle, and the reader the
llama.cpp comparison runs will use on the same files."""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass


class _InitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


def load_ggml_base() -> ctypes.CDLL | None:
    try:
        import llama_cpp  # noqa: F401 - only to find its shared libraries
    except Exception:  # noqa: BLE001 - not installed or broken build
        return None
    path = os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so")
    if not os.path.exists(path):
        return None
    lib = ctypes.CDLL(path)
    c = ctypes
    sig = {
        "gguf_init_from_buffer": (c.c_void_p, [c.c_void_p, c.c_size_t, _InitParams]),
        "gguf_free": (None, [c.c_void_p]),
        "gguf_get_version": (c.c_uint32, [c.c_void_p]),
        "gguf_get_alignment": (c.c_size_t, [c.c_void_p]),
        "gguf_get_data_offset": (c.c_size_t, [c.c_void_p]),
        "gguf_get_n_kv": (c.c_int64, [c.c_void_p]),
        "gguf_get_key": (c.c_char_p, [c.c_void_p, c.c_int64]),
        "gguf_get_kv_type": (c.c_int, [c.c_void_p, c.c_int64]),
        "gguf_get_arr_type": (c.c_int, [c.c_void_p, c.c_int64]),
        "gguf_get_arr_n": (c.c_size_t, [c.c_void_p, c.c_int64]),
        "gguf_get_n_tensors": (c.c_int64, [c.c_void_p]),
        "gguf_get_tensor_name": (c.c_char_p, [c.c_void_p, c.c_int64]),
        "gguf_get_tensor_offset": (c.c_size_t, [c.c_void_p, c.c_int64]),
        "gguf_get_tensor_type": (c.c_int, [c.c_void_p, c.c_int64]),
        "gguf_get_tensor_size": (c.c_size_t, [c.c_void_p, c.c_int64]),
        "gguf_get_tensor_ne": (c.POINTER(c.c_int64), [c.c_void_p, c.c_int64]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


@dataclass
class LlamaView:
    version: int
    alignment: int
    data_offset: int
    kvs: list[tuple[str, str]]                              # (key, type name as ours)
    tensors: list[tuple[str, int, tuple[int, ...], int, int]]  # name, type, ne, offset, nbytes


_NAMES = ["UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY",
          "UINT64", "INT64", "FLOAT64"]


def read_with_llama(lib: ctypes.CDLL, data: bytes) -> LlamaView | None:
    """None when llama.cpp rejects the bytes."""
    buf = ctypes.create_string_buffer(data, len(data))
    ctx = lib.gguf_init_from_buffer(buf, len(data), _InitParams(True, None))
    if not ctx:
        return None
    try:
        kvs = []
        for k in range(lib.gguf_get_n_kv(ctx)):
            t = lib.gguf_get_kv_type(ctx, k)
            name = _NAMES[t]
            if t == 9:
                name = f"ARRAY[{_NAMES[lib.gguf_get_arr_type(ctx, k)]}]"
            kvs.append((lib.gguf_get_key(ctx, k).decode("utf-8", "surrogateescape"), name))
        tensors = []
        for k in range(lib.gguf_get_n_tensors(ctx)):
            ne = lib.gguf_get_tensor_ne(ctx, k)
            tensors.append((lib.gguf_get_tensor_name(ctx, k).decode("utf-8", "surrogateescape"),
                            lib.gguf_get_tensor_type(ctx, k), tuple(ne[d] for d in range(4)),
                            lib.gguf_get_tensor_offset(ctx, k), lib.gguf_get_tensor_size(ctx, k)))
        return LlamaView(lib.gguf_get_version(ctx), lib.gguf_get_alignment(ctx), lib.gguf_get_data_offset(ctx),
                         kvs, tensors)
    finally:
        lib.gguf_free(ctx)


def ours_as_llama_view(f) -> LlamaView:
    """Our reading in the same shape (ne padded with 1 to 4 dims, like ggml)."""
    return LlamaView(
        f.version, f.alignment, f.data_offset,
        [(k, f.metadata_type(k)) for k in f.metadata],
        [(t.name, t.type_id, tuple(t.shape) + (1,) * (4 - len(t.shape)), t.offset, t.nbytes) for t in f.tensors])
