"""llama.cpp in process (llama-cpp-python 0.3.36) as a target: `--target llama.cpp`.

llama.cpp computes the logits; text goes through ds4kit's own tokenizer built from the same GGUF,
so both targets see the same token ids for the same prompt and a probe compares like with like.
Sessions (`LlamaCppTarget.session`) have ds4kit.engine.Session's method names and shapes
(ds4kit.targets.llama_cpp_session). llama.cpp has neither of D's roundings (no FP8 round trip of
KV rows, no FP4 indexer): its numerics are recorded as both off whatever --fp8-kv/--indexer-fp4
say (those flags are the embedded engine's).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from ds4kit.engine.generate import GenerationConfig, GenerationResult, TokenEvent, generate
from ds4kit.targets.capabilities import Capabilities, ModelIdentity
from ds4kit.targets.options import TargetOptions

# verify=False: its batched rows are not bitwise equal to one-token decode (probe margins
# measures by how much). No snapshot: rewind restores private state copies (see the session).
LLAMA_CPP_CAPABILITIES = Capabilities(logits=True, verify=False, snapshot=False, rewind=True, drafter=False,
                                      token_ids=True, top_logprobs=True, server_timings=False)
DEFAULT_N_CTX = 4096
DEFAULT_N_BATCH = 512


class LlamaCppTarget:
    kind = "llama.cpp"
    capabilities = LLAMA_CPP_CAPABILITIES

    def __init__(self, path: Path, options: TargetOptions, synthetic_model: str | None = None,
                 n_ctx: int = DEFAULT_N_CTX, n_batch: int = DEFAULT_N_BATCH):
        self.path = Path(path)
        self.options = options
        self.synthetic_model = synthetic_model
        self.n_ctx, self.n_batch = int(n_ctx), int(n_batch)
        self._lc = None
        self._llm = None
        self._file = None
        self._tokenizer = None

    # -- lifecycle ----------------------------------------------------------
    def load(self, n_ctx: int | None = None) -> None:
        """Open the GGUF in llama.cpp with a context of n_ctx tokens (default: the one given at
        construction); loading again with a larger n_ctx reopens it."""
        want = int(n_ctx or self.n_ctx)
        if self._llm is not None and want <= self.n_ctx:
            return
        from ds4kit import _engine
        from ds4kit.engine.model_file import ModelFile
        from ds4kit.targets.llama_cpp_loader import import_llama_cpp, open_llama

        self._lc = import_llama_cpp()
        self.close()  # a smaller context: reopened; its sessions refuse further calls
        self.n_ctx = want
        self._file = ModelFile(self.path)
        self._tokenizer = _engine.Tokenizer.from_gguf(self._file.gguf)
        self._llm = open_llama(self.path, threads=self.options.resolved_threads, n_ctx=self.n_ctx,
                               n_batch=self.n_batch, n_gpu_layers=self._gpu_layers())

    def _gpu_layers(self) -> int:
        """--backend cpu: none; auto: every layer where this llama.cpp build can offload; cuda/hip
        need such a build."""
        backend = self.options.backend
        if backend == "cpu":
            return 0
        offload = bool(self._lc.llama_supports_gpu_offload())
        if backend in ("cuda", "hip") and not offload:
            raise ValueError(f"--backend {backend}: this llama-cpp-python build cannot offload to a GPU "
                             "(rebuild it with CMAKE_ARGS=-DGGML_CUDA=on or -DGGML_HIP=on)")
        return -1 if offload else 0

    def close(self) -> None:
        if self._llm is not None:
            self._llm.ds4kit_session = None  # its sessions refuse further calls (see LlamaCppSession)
            self._llm.close()
            self._llm = None

    @property
    def llama(self) -> Any:
        """The loaded llama_cpp.Llama (load() first)."""
        if self._llm is None:
            raise RuntimeError("the target is not loaded yet: call load() first")
        return self._llm

    # -- what it is -----------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        loaded = self._llm is not None
        info = None
        if loaded:
            sysinfo = self._lc.llama_print_system_info()
            info = sysinfo.decode("utf-8", "replace") if isinstance(sysinfo, bytes) else str(sysinfo)
        return {
            "kind": self.kind,
            "backend": self.options.backend,
            "backend_resolved": (f"llama.cpp {'gpu' if self._gpu_layers() else 'cpu'}" if loaded else None),
            "threads": self.options.resolved_threads if loaded else self.options.threads,
            "numerics": {"fp8_kv": False, "indexer_fp4": False},
            "capabilities": self.capabilities.as_dict(),
            "synthetic_model": self.synthetic_model,
            "llama_cpp": {
                "version": getattr(self._lc, "__version__", None) if loaded else None,
                "system_info": info,
                "n_ctx": self.n_ctx,
                "n_batch": self.n_batch,
                "rewind": "restores a copy of the sequence state saved before each forward call "
                          "(llama_memory_seq_rm refuses partial removal on deepseek4)",
            },
        }

    def manifest_entry(self) -> dict[str, Any]:
        self._need_loaded()
        return {**self._file.manifest_entry(), "backend": self.describe()["backend_resolved"]}

    def identity(self) -> ModelIdentity:
        self._need_loaded()
        return ModelIdentity(self.path, self._file.name, self._file.architecture)

    def _need_loaded(self) -> None:
        if self._llm is None:
            raise RuntimeError("the target is not loaded yet: call load() first")

    # -- text (ds4kit's tokenizer from the same GGUF) ------------------------
    def tokenize(self, text: str, parse_special: bool = True) -> list[int]:
        self._need_loaded()
        return [int(t) for t in self._tokenizer.encode(text, parse_special)]

    def detokenize(self, ids: Sequence[int]) -> str:
        self._need_loaded()
        return bytes(self._tokenizer.decode([int(i) for i in ids])).decode("utf-8", errors="replace")

    def render_chat(self, messages: list[dict[str, Any]], thinking: bool = False, effort: str | None = None) -> str:
        from ds4kit.chat import render_chat

        return render_chat(messages, thinking=thinking, reasoning_effort=effort)

    def token_id(self, piece: str) -> int:
        self._need_loaded()
        return int(self._tokenizer.special_token_id(piece))

    # -- running ------------------------------------------------------------
    def session(self, max_ctx: int):
        """A fresh sequence (one at a time: it clears the context's memory and retires the previous
        session). The llama.cpp context is reopened when max_ctx exceeds it."""
        from ds4kit.targets.llama_cpp_session import LlamaCppSession

        self.load(max_ctx)
        return LlamaCppSession(self._llm, self._lc, max_ctx)

    def generate(self, prompt_ids: Sequence[int], config: GenerationConfig, *, max_ctx: int,
                 on_token: Callable[[TokenEvent], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> GenerationResult:
        """ds4kit's own generation loop and sampler over llama.cpp's logits."""
        self._need_loaded()
        return generate(self.session(max_ctx), self._tokenizer, prompt_ids, config, on_token=on_token,
                        should_stop=should_stop)
