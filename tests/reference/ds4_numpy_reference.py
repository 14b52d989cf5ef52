"""Plain float64 numpy reference of the DeepSeek V4 Flash forward pass.

Written from /work/shared/design/ds4-model.md sections 1-4; it is the oracle the
C++ engine is tested against. One token at a time, with the sequential state of
section 4. Names follow the spec's notation (X, u, h, q_lat, Q, kv, kappa, g, ...).

    w = load_weights("model.gguf")
    s = ReferenceSession(w, max_ctx=1024)             # D's semantics (FP8 KV, FP4 indexer)
    logits = s.step(token_id)                         # float64 [vocab]
    g = ReferenceSession(w, 1024, fp8_kv=False, indexer_fp4=False)   # llama.cpp's semantics
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np

from ds4_ref_numerics import (
    COMPRESSOR_SCORE_INIT, MOE_WEIGHT_SUM_FLOOR, RopeParams, clamped_swiglu, f16_round,
    fp8_kv_round_trip, hc_post, hc_pre, indexer_transform, norm_rows_unweighted,
    norm_unweighted, norm_weighted, rope_tail, sigmoid, softmax, softplus, top_k_indices,
)
from ds4_ref_weights import Hparams, ReferenceFormatError, Weights, load_weights

__all__ = ["ReferenceSession", "load_weights", "Weights", "Hparams", "ReferenceFormatError"]

# llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SQRT_SOFTPLUS; the spec: "sqrt(softplus) (=4 in G)".
GATING_SQRT_SOFTPLUS = 4


# ------------------------------------------------------------------------ state

@dataclass
class CompressorState:
    """Rolling compressor window (spec 'State: kv_state and score_state [Wc, c*r]').
    Rows are tokens: r rows for r=128; 2*4 rows for r=4 (0..3 previous window,
    4..7 current window). Scores start at -1e30 (D), so an empty slot gets weight 0."""
    kv: np.ndarray
    score: np.ndarray

    @classmethod
    def fresh(cls, ratio: int, width: int) -> "CompressorState":
        rows = 2 * ratio if ratio == 4 else ratio
        return cls(kv=np.zeros((rows, width)), score=np.full((rows, width), COMPRESSOR_SCORE_INIT))


@dataclass
class LayerState:
    ratio: int
    ring: np.ndarray                                  # raw window, slot p mod n_swa
    comp_rows: list = field(default_factory=list)     # compressed rows, index floor(p/r);
    idx_rows: list = field(default_factory=list)      # indexer rows (r=4); visible: first floor((pos+1)/r)
    comp: CompressorState | None = None
    idx_comp: CompressorState | None = None
    last_selected: np.ndarray | None = None           # compressed rows attention used at the last step


def _store_row(rows: list, index: int, row: np.ndarray) -> None:
    """Compressed row `index` = floor(p/r); rows beyond the visible count are stale
    leftovers of a rolled-back continuation and get overwritten, as in a fixed buffer."""
    if index < len(rows):
        rows[index] = row
    elif index == len(rows):
        rows.append(row)
    else:
        raise AssertionError(f"compressed row {index} written before row {len(rows)}")


# ---------------------------------------------------------------------- session

class ReferenceSession:
    """Sequential state of section 4 plus `step(token) -> logits`.

    fp8_kv: round the non-RoPE dims of raw and compressed KV rows through FP8 E4M3 (D).
    indexer_fp4: FP4 round trip of indexer rows and queries after the Hadamard (D).
    Both False give llama.cpp 0.3.36's semantics (spec section 8).
    f16_rows: store raw/compressed/indexer rows as F16 (the spec's state types).
    trace: keep per-layer intermediates of every step in self.trace[il] (the layer's input and
    output HC streams X_in / X_out [n_hc, n_embd] among them; lists of
    dicts), for tests and for locating where an engine departs from the reference.
    """

    def __init__(self, weights: Weights, max_ctx: int, fp8_kv: bool = True,
                 indexer_fp4: bool = True, f16_rows: bool = True, trace: bool = False):
        self.w = weights
        self.hp: Hparams = weights.hp
        self.max_ctx = int(max_ctx)
        self.fp8_kv = fp8_kv
        self.indexer_fp4 = indexer_fp4
        self.f16_rows = f16_rows
        self._check_hparams()
        hp = self.hp
        self.pos = 0
        self._swaps: set = set()
        self.trace = [[] for _ in range(hp.n_layer)] if trace else None
        self.layers: list[LayerState] = []
        for il in range(hp.n_layer):
            r = hp.compress_ratios[il]
            st = LayerState(ratio=r, ring=np.zeros((hp.n_swa, hp.head_dim)))
            if r:
                c = 2 if r == 4 else 1
                st.comp = CompressorState.fresh(r, c * hp.head_dim)
                if r == 4:
                    st.idx_comp = CompressorState.fresh(r, 2 * hp.idx_head_dim)
            self.layers.append(st)
        plain = RopeParams(n_rot=hp.n_rot, freq_base=hp.rope_freq_base)
        yarn = hp.yarn_factor > 1.0
        compressed = RopeParams(
            n_rot=hp.n_rot, freq_base=hp.compress_rope_freq_base,
            freq_scale=1.0 / hp.yarn_factor if yarn else 1.0,
            ext_factor=1.0 if yarn else 0.0, n_ctx_orig=hp.yarn_orig_ctx,
            beta_fast=hp.yarn_beta_fast, beta_slow=hp.yarn_beta_slow)
        # Spec: ratio-0 layers plain RoPE base 10000; compressed layers base 160000 + YaRN.
        self.rope = [compressed if r else plain for r in hp.compress_ratios]

    def _check_hparams(self):
        hp = self.hp
        if hp.n_head_kv != 1:
            raise ReferenceFormatError(f"head_count_kv is {hp.n_head_kv}; DS4 has one latent KV head")
        if hp.n_head % hp.o_groups:
            raise ReferenceFormatError(f"head_count {hp.n_head} is not a multiple of output_group_count {hp.o_groups}")
        if hp.expert_gating_func != GATING_SQRT_SOFTPLUS:
            raise ReferenceFormatError(f"expert_gating_func is {hp.expert_gating_func}; DS4 uses sqrt(softplus) (4)")
        if hp.n_rot > hp.head_dim or hp.n_rot % 2:
            raise ReferenceFormatError(f"rope dimension_count {hp.n_rot} does not fit head dim {hp.head_dim}")

    # ------------------------------------------------------------ snapshots

    def snapshot(self):
        """Everything section 4 lists: per layer the ring, compressed and indexer rows,
        both compressor states, plus the position (a deep copy)."""
        return (self.pos, copy.deepcopy(self.layers))

    def restore(self, snap) -> None:
        self.pos, layers = snap
        self.layers = copy.deepcopy(layers)
        if self.trace is not None:
            self.trace = [t[:self.pos] for t in self.trace]

    # -------------------------------------------------------------- one token

    def step(self, token: int, swaps=(), want_logits: bool = True):
        """Run one token and return its logits (None with want_logits=False, which skips
        the LM head, the slowest part with a real 129280-token vocab; the state advances
        the same). `swaps` is for oracle comparisons only:
        a set of (layer, "moe" | "idx") whose top-k boundary is flipped at this step
        (the k-th choice replaced by the (k+1)-th), to follow another implementation
        through a near-tie. The trace records each boundary's margin."""
        hp, w = self.hp, self.w
        p = self.pos
        self._swaps = set(swaps)
        if p >= self.max_ctx:
            raise ValueError(f"context full: position {p} >= max_ctx {self.max_ctx}")
        if not 0 <= token < hp.n_vocab:
            raise ValueError(f"token id {token} outside vocab of {hp.n_vocab}")
        # Embedding: e = token_embd[tok] (no scale); all streams = e.
        e = w["token_embd.weight"][token]
        X = np.tile(e, (hp.n_hc, 1))
        for il in range(hp.n_layer):
            if self.trace is not None:
                self.trace[il].append({"pos": p, "token": token, "X_in": X.copy()})
            X = self._attention_sublayer(il, X, p)
            X = self._ffn_sublayer(il, X, token)
            self._record(il, X_out=X.copy())
        logits = self._output_head(X) if want_logits else None
        self.pos += 1
        return logits

    # -------------------------------------------------------------- attention

    def _attention_sublayer(self, il: int, X: np.ndarray, p: int) -> np.ndarray:
        hp, w, st, rope = self.hp, self.w, self.layers[il], self.rope[il]
        b = f"blk.{il}."
        u, split = hc_pre(X, w[b + "hc_attn_fn.weight"], w[b + "hc_attn_scale.weight"],
                          w[b + "hc_attn_base.weight"], hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps)
        h = norm_weighted(u, w[b + "attn_norm.weight"], hp.rms_eps)
        q_lat = norm_weighted(w[b + "attn_q_a.weight"] @ h, w[b + "attn_q_a_norm.weight"], hp.rms_eps)
        Q = (w[b + "attn_q_b.weight"] @ q_lat).reshape(hp.n_head, hp.head_dim)
        Q = norm_rows_unweighted(Q, hp.rms_eps)
        kv = norm_weighted(w[b + "attn_kv.weight"] @ h, w[b + "attn_kv_a_norm.weight"], hp.rms_eps)
        Q = rope_tail(Q, p, rope)
        kv = rope_tail(kv, p, rope)
        st.ring[p % hp.n_swa] = self._store_kv_row(kv)

        selected_rows = np.zeros((0, hp.head_dim))
        if st.ratio:
            # The compressors run before attention, so a row completed at p is visible at p.
            n_visible = (p + 1) // st.ratio
            row = self._compressor_step(il, st.comp, "attn_compressor", hp.head_dim, h, p, indexer=False)
            if row is not None:
                _store_row(st.comp_rows, n_visible - 1, row)
            selected = np.arange(n_visible)
            if st.ratio == 4:
                irow = self._compressor_step(il, st.idx_comp, "indexer_compressor", hp.idx_head_dim, h, p,
                                             indexer=True)
                if irow is not None:
                    _store_row(st.idx_rows, n_visible - 1, irow)
                selected = self._indexer_select(il, h, q_lat, p)
            st.last_selected = selected
            if len(selected):
                selected_rows = np.array([st.comp_rows[i] for i in selected])
        # Keys: raw window rows max(0, p-n_swa+1)..p, then the allowed compressed rows
        # (they may overlap the window; no dedup). V = K.
        first = max(0, p - hp.n_swa + 1)
        raw_rows = np.array([st.ring[t % hp.n_swa] for t in range(first, p + 1)])
        K = np.concatenate([raw_rows, selected_rows], axis=0)
        O = self._attend(Q, K, w[b + "attn_sinks.weight"])
        self._record(il, h=h, q_lat=q_lat, Q=Q, kv=st.ring[p % hp.n_swa].copy(), O=O,
                     selected=st.last_selected)
        O = rope_tail(O, p, rope, inverse=True)
        y = self._grouped_output(il, O)
        return hc_post(y, X, split)

    def _store_kv_row(self, kv: np.ndarray) -> np.ndarray:
        if self.fp8_kv:
            kv = fp8_kv_round_trip(kv, self.hp.n_rot)
        return f16_round(kv) if self.f16_rows else kv

    def _attend(self, Q: np.ndarray, K: np.ndarray, sinks: np.ndarray) -> np.ndarray:
        """s = Q_h.K / sqrt(D); softmax whose denominator also has exp(sink_h) (the sink
        carries no value); o_h = sum_t w_t K_t."""
        s = (Q @ K.T) / math.sqrt(self.hp.head_dim)                  # [H, T]
        m = np.maximum(np.max(s, axis=1), sinks)                     # stability only
        e = np.exp(s - m[:, None])
        denom = e.sum(axis=1) + np.exp(sinks - m)
        return (e @ K) / denom[:, None]

    def _grouped_output(self, il: int, O: np.ndarray) -> np.ndarray:
        """z_g = W_oa[g] concat(o of the heads in group g); y = W_ob concat(z_0..z_{G-1})."""
        hp, w = self.hp, self.w
        b = f"blk.{il}."
        W_oa = w[b + "attn_output_a.weight"]                          # [G*R, H*D/G]
        groups = O.reshape(hp.o_groups, -1)                          # heads of a group are contiguous
        R = hp.o_lora_rank
        z = np.concatenate([W_oa[g * R:(g + 1) * R] @ groups[g] for g in range(hp.o_groups)])
        return w[b + "attn_output_b.weight"] @ z

    # ------------------------------------------------------------- compressor

    def _compressor_step(self, il: int, state: CompressorState, prefix: str, Dc: int,
                         h: np.ndarray, p: int, indexer: bool):
        """One token of a compressor (spec 'Compressor'); returns the new compressed
        row when (p+1) mod r == 0, else None."""
        hp, w = self.hp, self.w
        b = f"blk.{il}."
        r = self.layers[il].ratio
        kappa = w[b + prefix + "_kv.weight"] @ h
        g = w[b + prefix + "_gate.weight"] @ h + w[b + prefix + "_ape.weight"][p % r]
        slot = r + (p % r) if r == 4 else p % r
        state.kv[slot] = kappa
        state.score[slot] = g
        if (p + 1) % r:
            return None
        if r == 4:
            # 8 candidates per column j: previous rows 0..3 at column j, current rows 4..7 at column D+j.
            cand_kv = np.concatenate([state.kv[:4, :Dc], state.kv[4:, Dc:]], axis=0)
            cand_sc = np.concatenate([state.score[:4, :Dc], state.score[4:, Dc:]], axis=0)
        else:
            cand_kv, cand_sc = state.kv, state.score
        pooled = np.sum(softmax(cand_sc, axis=0) * cand_kv, axis=0)
        row = norm_weighted(pooled, w[b + prefix + "_norm.weight"], hp.rms_eps)
        row = rope_tail(row, p + 1 - r, self.rope[il])
        if indexer:
            row = indexer_transform(row, fp4=self.indexer_fp4)
        elif self.fp8_kv:
            row = fp8_kv_round_trip(row, hp.n_rot)
        if r == 4:
            # The current window becomes the previous one.
            state.kv[:4] = state.kv[4:]
            state.score[:4] = state.score[4:]
        return f16_round(row) if self.f16_rows else row

    # ---------------------------------------------------------------- indexer

    def _indexer_select(self, il: int, h: np.ndarray, q_lat: np.ndarray, p: int) -> np.ndarray:
        """Which compressed rows attention sees at p (r=4 layers). n_c = floor((p+1)/4)
        rows exist; all of them when n_c <= top_k, else the top_k by
        score_c = sum_h w_h ReLU(q_I,h . k_c)."""
        hp, w, st = self.hp, self.w, self.layers[il]
        n_c = (p + 1) // 4
        if n_c <= hp.idx_top_k:
            return np.arange(n_c)
        b = f"blk.{il}."
        q_I = (w[b + "indexer.attn_q_b.weight"] @ q_lat).reshape(hp.idx_n_head, hp.idx_head_dim)
        q_I = rope_tail(q_I, p, self.rope[il])
        q_I = indexer_transform(q_I, fp4=self.indexer_fp4)
        w_h = (w[b + "indexer.proj.weight"] @ h) / math.sqrt(hp.idx_head_dim * hp.idx_n_head)
        K_I = np.array(st.idx_rows[:n_c])                             # [n_c, d_i]
        scores = np.maximum(q_I @ K_I.T, 0.0).T @ w_h                # [n_c]
        self._record(il, indexer_scores=scores)
        return np.sort(self._top_k_decision(il, "idx", scores, hp.idx_top_k))

    # -------------------------------------------------------------------- MoE

    def _ffn_sublayer(self, il: int, X: np.ndarray, token: int) -> np.ndarray:
        hp, w = self.hp, self.w
        b = f"blk.{il}."
        u2, split = hc_pre(X, w[b + "hc_ffn_fn.weight"], w[b + "hc_ffn_scale.weight"],
                           w[b + "hc_ffn_base.weight"], hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps)
        h2 = norm_weighted(u2, w[b + "ffn_norm.weight"], hp.rms_eps)
        s = np.sqrt(softplus(w[b + "ffn_gate_inp.weight"] @ h2))
        if il < hp.n_hash_layers:
            experts = w[b + "ffn_gate_tid2eid.weight"][token].astype(np.int64)
        else:
            # The bias only selects; the weights use the unbiased s.
            experts = self._top_k_decision(il, "moe", s + w[b + "exp_probs_b.bias"], hp.n_expert_used)
        if np.any(experts < 0) or np.any(experts >= hp.n_expert):
            raise ReferenceFormatError(f"layer {il}: expert id outside 0..{hp.n_expert - 1}: {experts}")
        weights = s[experts]
        if hp.expert_weights_norm:
            weights = weights / max(float(np.sum(weights)), MOE_WEIGHT_SUM_FLOOR)
        weights = weights * hp.expert_weights_scale
        clamp = hp.swiglu_clamp_exp[il]
        y = np.zeros(hp.n_embd)
        for e_id, w_e in zip(experts, weights):
            act = clamped_swiglu(w[b + "ffn_gate_exps.weight"][e_id] @ h2,
                                 w[b + "ffn_up_exps.weight"][e_id] @ h2, clamp)
            y += w_e * (w[b + "ffn_down_exps.weight"][e_id] @ act)
        act = clamped_swiglu(w[b + "ffn_gate_shexp.weight"] @ h2, w[b + "ffn_up_shexp.weight"] @ h2,
                             hp.swiglu_clamp_shexp[il])
        y += w[b + "ffn_down_shexp.weight"] @ act
        self._record(il, h2=h2, experts=experts, expert_weights=weights)
        return hc_post(y, X, split)

    def _top_k_decision(self, il: int, kind: str, scores: np.ndarray, k: int) -> np.ndarray:
        """Top-k (ties: lower index first, as D) and the margin between the k-th and the
        (k+1)-th score, the size of the numeric difference that would flip the choice."""
        order = top_k_indices(scores, k + 1)
        if len(order) > k:
            self._record(il, **{kind + "_margin": float(scores[order[k - 1]] - scores[order[k]])})
            if (il, kind) in self._swaps:
                return np.concatenate([order[:k - 1], order[k:k + 1]])
        return order[:k]

    def _record(self, il: int, **values):
        if self.trace is not None:
            self.trace[il][-1].update(values)

    # ------------------------------------------------------------ output head

    def _output_head(self, X: np.ndarray) -> np.ndarray:
        """x = N(flatten(X)); w_h = sigmoid(m_h*scale0 + base_h) + eps;
        e = sum_h w_h X_h; logits = W_out N_output_norm(e)."""
        hp, w = self.hp, self.w
        x = norm_unweighted(X.reshape(-1), hp.rms_eps)
        m = w["output_hc_fn.weight"] @ x
        w_h = sigmoid(m * float(w["output_hc_scale.weight"].reshape(-1)[0]) + w["output_hc_base.weight"]) + hp.hc_eps
        e = w_h @ X
        return w["output.weight"] @ norm_weighted(e, w["output_norm.weight"], hp.rms_eps)
