"""Targets: what a job talks to (architecture.md, "Targets and jobs").

A target declares its `Capabilities`; a job asks for the ones it needs and records in its
report what it could not measure on that target, instead of failing or guessing. Today there
are two: the embedded engine (`EmbeddedTarget`) and llama.cpp in process through llama-cpp-python
(`LlamaCppTarget`, `--target llama.cpp`; its sessions have the engine Session's methods). An
OpenAI-compatible HTTP server (Lucebox dflash_server, llama-server, vLLM: text, top-k logprobs, the
server's timing and cache fields) is meant to be added as a further module here, implementing the
`Target` protocol, without changes to jobs or probes.

    from ds4kit.targets import TargetOptions, build_target
    target = build_target(TargetOptions(model="model.gguf", backend="auto", threads=None))
    target.load()                        # the job does this inside its run, so errors land in the report
"""
from ds4kit.targets.capabilities import Capabilities, ModelIdentity, Target
from ds4kit.targets.embedded import EmbeddedTarget
from ds4kit.targets.options import TARGET_CHOICES, Numerics, TargetOptions, build_target

__all__ = ["Capabilities", "EmbeddedTarget", "ModelIdentity", "Numerics", "TARGET_CHOICES", "Target",
           "TargetOptions", "build_target"]
