"""Python facade over the C++ engine (ds4kit._engine): numpy in, numpy out."""
from ds4kit.engine.model_file import ModelFile, open_model_file

__all__ = ["ModelFile", "open_model_file"]
