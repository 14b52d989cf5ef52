"""Building blocks of the DeepSeek V4 Flash forward pass, float64, written from
/work/shared/design/ds4-model.md section 3.

Every function is plain numpy on float64 and named after the spec's notation.
Where the spec leaves a detail open, the comment says what antirez/ds4 `ds4.c`
(the spec's ground truth "D") does and which function there was read; no code
was copied.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Spec constants (section 3): the FP8 round trip works on blocks of 64 values with
# a power-of-two scale and amax floored at 1e-4; FP4 on blocks of 32.
FP8_BLOCK = 64
FP8_E4M3_MAX = 448.0
FP8_AMAX_FLOOR = 1e-4
FP4_BLOCK = 32
FP4_E2M1_MAX = 6.0
# ds4.c dsv4_fp4_act_quantize_row_inplace_cpu floors amax at this value (so the
# scale never underflows to zero); the spec does not name it.
FP4_AMAX_FLOOR = 7.052966104933725e-38
# MoE weight normalisation floor (spec: max(sum_sel s, 6.1035e-5); ds4.c uses 2^-14).
MOE_WEIGHT_SUM_FLOOR = 6.103515625e-5
# Initial compressor score state (spec section 3 "Initial score_state = -1e30 (D)").
COMPRESSOR_SCORE_INIT = -1e30


# --------------------------------------------------------------------------- norms

def rms(v: np.ndarray, eps: float) -> float:
    """rms(v) = sqrt(mean(v^2) + eps)."""
    v = np.asarray(v, dtype=np.float64)
    return math.sqrt(float(np.mean(v * v)) + eps)


def norm_unweighted(v: np.ndarray, eps: float) -> np.ndarray:
    """N(v) = v / rms(v)."""
    return np.asarray(v, dtype=np.float64) / rms(v, eps)


def norm_weighted(v: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """N_w(v) = v / rms(v) * w."""
    return norm_unweighted(v, eps) * w


def norm_rows_unweighted(m: np.ndarray, eps: float) -> np.ndarray:
    """N applied to every row of m (used for the per-head Q norm)."""
    m = np.asarray(m, dtype=np.float64)
    r = np.sqrt(np.mean(m * m, axis=-1, keepdims=True) + eps)
    return m / r


# ------------------------------------------------------------------ small functions

def sigmoid(x):
    x = np.asarray(x, dtype=np.float64)
    # Two branches so neither exp overflows (ds4.c sigmoid_stable does the same).
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out


def softplus(x):
    """Stable softplus log(1 + e^x) (spec: 'stable softplus')."""
    x = np.asarray(x, dtype=np.float64)
    return np.logaddexp(0.0, x)


def silu(x):
    return np.asarray(x, dtype=np.float64) * sigmoid(x)


def softmax(x, axis=-1):
    """Max-subtracted softmax (stability only; the value is the exact softmax)."""
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def clamped_swiglu(gate, up, clamp: float):
    """silu(min(gate, clamp)) * clamp(up, -clamp, clamp); no clamp when clamp <= 1e-6
    (the threshold ds4.c and llama.cpp both use for 'clamp disabled')."""
    gate = np.asarray(gate, dtype=np.float64)
    up = np.asarray(up, dtype=np.float64)
    if clamp > 1e-6:
        gate = np.minimum(gate, clamp)
        up = np.clip(up, -clamp, clamp)
    return silu(gate) * up


def top_k_indices(scores, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first; equal scores keep the lower
    index first (ds4.c topk_desc and the indexer's selection loop both use a
    strict '>' scan, so the earlier index wins a tie)."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    return order[:k]


def f16_round(x):
    """Round trip through IEEE half precision (how the spec stores KV rows)."""
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


# -------------------------------------------------------------- hyper-connections

def sinkhorn(logits: np.ndarray, iters: int, eps: float) -> np.ndarray:
    """Spec HC-pre: softmax along c per row, +eps, then column-normalise (divide by
    colsum+eps), then iters-1 more rounds of row-normalise then column-normalise.
    Row/column sums get +eps in every later round too (ds4.c hc_split_sinkhorn_one)."""
    M = softmax(np.asarray(logits, dtype=np.float64), axis=1) + eps
    M = M / (M.sum(axis=0, keepdims=True) + eps)
    for _ in range(iters - 1):
        M = M / (M.sum(axis=1, keepdims=True) + eps)
        M = M / (M.sum(axis=0, keepdims=True) + eps)
    return M


@dataclass
class HcSplit:
    pre: np.ndarray    # [n_hc], weights of the sublayer input (not normalised)
    post: np.ndarray   # [n_hc], gates of the sublayer output
    comb: np.ndarray   # [n_hc, n_hc], M[r][c]: stream r's share in new stream c


def hc_split(m: np.ndarray, scale: np.ndarray, base: np.ndarray, n_hc: int,
             iters: int, eps: float) -> HcSplit:
    """pre_i = sigmoid(a0 m_i + b_i) + eps; post_i = 2 sigmoid(a1 m_{n+i} + b_{n+i});
    M[r][c] = a2 m_{2n+n r+c} + b_{2n+n r+c}, then Sinkhorn."""
    n = n_hc
    a0, a1, a2 = float(scale[0]), float(scale[1]), float(scale[2])
    pre = sigmoid(a0 * m[:n] + base[:n]) + eps
    post = 2.0 * sigmoid(a1 * m[n:2 * n] + base[n:2 * n])
    logits = (a2 * m[2 * n:2 * n + n * n] + base[2 * n:2 * n + n * n]).reshape(n, n)
    return HcSplit(pre=pre, post=post, comb=sinkhorn(logits, iters, eps))


def hc_pre(X: np.ndarray, fn: np.ndarray, scale, base, iters: int, hc_eps: float,
           rms_eps: float):
    """x = N(flatten(X)); m = fn . x; u = sum_h pre_h X_h. Returns (u, split)."""
    n_hc = X.shape[0]
    x = norm_unweighted(X.reshape(-1), rms_eps)
    m = fn @ x
    split = hc_split(m, scale, base, n_hc, iters, hc_eps)
    u = split.pre @ X
    return u, split


def hc_post(y: np.ndarray, X: np.ndarray, split: HcSplit) -> np.ndarray:
    """X'_j = post_j * y + sum_r M[r][j] X_r (replaces the residual add)."""
    return split.post[:, None] * y[None, :] + split.comb.T @ X


# -------------------------------------------------------------------------- RoPE

@dataclass(frozen=True)
class RopeParams:
    """RoPE of one layer kind. Ratio-0 layers: plain RoPE (ext_factor 0).
    Compressed layers: YaRN with freq_scale = 1/factor, ext_factor = 1."""
    n_rot: int
    freq_base: float
    freq_scale: float = 1.0
    ext_factor: float = 0.0
    n_ctx_orig: int = 0
    beta_fast: float = 32.0
    beta_slow: float = 1.0


def yarn_corr_dims(p: RopeParams) -> tuple[float, float]:
    """YaRN correction range in pair indices: the pair whose wavelength spans
    n_ctx_orig / beta full turns. ds4.c rope_yarn_corr_dims: floor of the
    beta_fast dim, ceil of the beta_slow dim, clipped to [0, n_rot-1].
    (Gives lo=15, hi=25 for base 160000, n_rot 64, orig ctx 65536 as in the spec.)"""
    def corr_dim(n_turns):
        return p.n_rot * math.log(p.n_ctx_orig / (n_turns * 2.0 * math.pi)) / (2.0 * math.log(p.freq_base))
    lo = max(0.0, math.floor(corr_dim(p.beta_fast)))
    hi = min(float(p.n_rot - 1), math.ceil(corr_dim(p.beta_slow)))
    return lo, hi


def rope_angles(pos: float, p: RopeParams) -> np.ndarray:
    """Rotation angle of each of the n_rot/2 adjacent pairs at position pos.

    theta_extrap_i = pos * base^(-2i/n_rot); theta_interp_i = freq_scale * theta_extrap_i.
    With YaRN (ext_factor != 0) ds4.c rope_tail_ext_inplace mixes them with
    ramp_i = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1): pairs below lo keep
    the extrapolated (unscaled) angle, pairs above hi the interpolated one.
    ds4.c passes attn_factor = 1/(1 + 0.1 ln(1/freq_scale)) so the YaRN magnitude
    factor cancels: the net scale is exactly 1, so no magnitude factor appears here."""
    i = np.arange(p.n_rot // 2, dtype=np.float64)
    theta_extrap = pos * p.freq_base ** (-2.0 * i / p.n_rot)
    theta_interp = p.freq_scale * theta_extrap
    if p.ext_factor == 0.0:
        return theta_interp
    lo, hi = yarn_corr_dims(p)
    y = (i - lo) / max(0.001, hi - lo)
    ramp_mix = (1.0 - np.clip(y, 0.0, 1.0)) * p.ext_factor
    return theta_interp * (1.0 - ramp_mix) + theta_extrap * ramp_mix


def rope_tail(x: np.ndarray, pos: float, p: RopeParams, inverse: bool = False) -> np.ndarray:
    """Rotate adjacent pairs (2i, 2i+1) of the last n_rot dims of every row of x
    ('normal' RoPE). inverse=True rotates by the opposite angle."""
    x = np.array(x, dtype=np.float64, copy=True)
    theta = rope_angles(pos, p)
    c, s = np.cos(theta), np.sin(theta)
    if inverse:
        s = -s
    tail = x[..., x.shape[-1] - p.n_rot:]
    x0 = tail[..., 0::2].copy()
    x1 = tail[..., 1::2].copy()
    tail[..., 0::2] = x0 * c - x1 * s
    tail[..., 1::2] = x0 * s + x1 * c
    return x


# ---------------------------------------------------------------- FP8 / FP4 / Hadamard

def _e4m3fn_values() -> np.ndarray:
    """The 127 non-negative finite E4M3FN magnitudes in code order (index = low 7 bits):
    exponent bias 7, subnormals mant * 2^-9, largest 448 (code 126; 127 is NaN)."""
    vals = []
    for code in range(127):
        e, mant = code >> 3, code & 7
        vals.append(mant * 2.0 ** -9 if e == 0 else (1.0 + mant / 8.0) * 2.0 ** (e - 7))
    return np.array(vals)


E4M3FN_VALUES = _e4m3fn_values()
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def round_to_grid(x, grid: np.ndarray) -> np.ndarray:
    """Round |x| to the nearest grid value (grid ascending, starting at 0), ties to
    the even code index, keeping the sign; values beyond the grid saturate to its top.
    This is the rule of ds4.c dsv4_e4m3fn_dequant_cpu / dsv4_e2m1fn_dequant_cpu
    (round to nearest, ties to even)."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.minimum(np.abs(x), grid[-1])
    hi = np.clip(np.searchsorted(grid, ax, side="left"), 1, len(grid) - 1)
    lo = hi - 1
    d_lo = ax - grid[lo]
    d_hi = grid[hi] - ax
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    idx = np.where(pick_hi, hi, lo)
    return np.sign(x) * grid[idx]


def _pow2_scale(amax: float, top: float) -> float:
    """Smallest power of two s with amax / s <= top: 2^ceil(log2(amax/top))."""
    return 2.0 ** math.ceil(math.log2(amax / top))


def fp8_e4m3_round_trip(v: np.ndarray, block: int = FP8_BLOCK) -> np.ndarray:
    """FP8-E4M3 round trip per block of `block` values with a power-of-two scale
    2^ceil(log2(amax/448)), amax >= 1e-4 (spec section 3; ds4.c
    dsv4_fp8_kv_quantize_row_inplace_cpu). A short last block is handled on its
    own values (ds4.c assumes whole blocks; DS4 rows always have them)."""
    v = np.asarray(v, dtype=np.float64)
    out = np.empty_like(v)
    for off in range(0, v.shape[-1], block):
        b = v[off:off + block]
        amax = max(float(np.max(np.abs(b))), FP8_AMAX_FLOOR)
        s = _pow2_scale(amax, FP8_E4M3_MAX)
        out[off:off + block] = round_to_grid(np.clip(b / s, -FP8_E4M3_MAX, FP8_E4M3_MAX), E4M3FN_VALUES) * s
    return out


def fp8_kv_round_trip(kv: np.ndarray, n_rot: int) -> np.ndarray:
    """FP8 round trip of the non-RoPE dims only; the last n_rot dims are kept."""
    kv = np.array(kv, dtype=np.float64, copy=True)
    n_nope = kv.shape[-1] - n_rot
    kv[:n_nope] = fp8_e4m3_round_trip(kv[:n_nope])
    return kv


def fp4_e2m1_round_trip(v: np.ndarray, block: int = FP4_BLOCK) -> np.ndarray:
    """FP4 (E2M1) round trip per block of 32 values, scale 2^ceil(log2(amax/6))
    (ds4.c dsv4_fp4_act_quantize_row_inplace_cpu)."""
    v = np.asarray(v, dtype=np.float64)
    if v.shape[-1] % block:
        raise ValueError(f"FP4 round trip needs a multiple of {block} values, got {v.shape[-1]}")
    out = np.empty_like(v)
    for off in range(0, v.shape[-1], block):
        b = v[off:off + block]
        amax = max(float(np.max(np.abs(b))), FP4_AMAX_FLOOR)
        s = _pow2_scale(amax, FP4_E2M1_MAX)
        out[off:off + block] = round_to_grid(np.clip(b / s, -FP4_E2M1_MAX, FP4_E2M1_MAX), E2M1_VALUES) * s
    return out


def hadamard_matrix(n: int) -> np.ndarray:
    """Orthonormal Sylvester-Hadamard matrix H_n / sqrt(n) (natural order, as the
    butterfly in ds4.c dsv4_hadamard128_inplace_cpu produces it)."""
    if n <= 0 or n & (n - 1):
        raise ValueError(f"Hadamard transform needs a power-of-two width, got {n}")
    H = np.array([[1.0]])
    while H.shape[0] < n:
        H = np.block([[H, H], [H, -H]])
    return H / math.sqrt(n)


def indexer_transform(rows: np.ndarray, fp4: bool) -> np.ndarray:
    """Spec: indexer rows (and indexer queries) get a Hadamard transform (x 1/sqrt(d))
    and, with D's semantics, an FP4 round trip per 32 values."""
    rows = np.asarray(rows, dtype=np.float64)
    H = hadamard_matrix(rows.shape[-1])
    out = rows @ H.T
    if fp4:
        out = np.apply_along_axis(fp4_e2m1_round_trip, -1, out)
    return out
