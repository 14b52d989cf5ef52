"""Python facade over the C++ engine (ds4kit._engine): numpy in, numpy out.

`Model` is the one entry point that runs the engine; `ModelFile` reads a GGUF's metadata
without loading the model (ds4kit model info)."""
from ds4kit.engine.drafter import Drafter
from ds4kit.engine.model import BACKENDS, Model, available_backends
from ds4kit.engine.model_file import ModelFile, open_model_file
from ds4kit.engine.session import Session, Snapshot

__all__ = ["BACKENDS", "Drafter", "Model", "ModelFile", "Session", "Snapshot", "available_backends",
           "open_model_file"]
