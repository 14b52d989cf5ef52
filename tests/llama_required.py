"""The llama.cpp oracle for tests that need it: a missing llama-cpp-python fails the test (an
oracle must not silently disappear), unless DS4KIT_ALLOW_MISSING_LLAMA=1 turns that into a skip."""
import os

import pytest


def llama_cpp_or_fail():
    try:
        import llama_cpp
        return llama_cpp
    except ImportError as exc:
        if os.environ.get("DS4KIT_ALLOW_MISSING_LLAMA") == "1":
            pytest.skip(f"llama_cpp not importable ({exc}); allowed by DS4KIT_ALLOW_MISSING_LLAMA=1")
        pytest.fail(f"llama_cpp (llama-cpp-python==0.3.36) is not importable: {exc}")
