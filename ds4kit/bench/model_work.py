"""Matmul parameters one prompt token passes through: the FLOP count behind the prefill fraction.

Every weight with two or more dimensions multiplies the token's activations once, except:
the token embedding (a row lookup), the output head (prefill computes only the last row's
logits, so it runs once per prompt, reported separately), integer tables (hash routing's
tid2eid) and additive positional tables (compressor `*_ape`). Routed experts count
expert_used_count / expert_count of their parameters, as for decode bytes.
"""
from __future__ import annotations

import re
from typing import Any

from ds4kit.engine.model_file import is_routed_expert

_NOT_MATMUL = re.compile(r"(^token_embd\.|_ape\.|tid2eid)")
_OUTPUT_HEAD = "output.weight"


def matmul_params(model_file: Any) -> dict[str, Any]:
    n_expert = model_file.arch_key("expert_count")
    n_used = model_file.arch_key("expert_used_count")
    per_token = experts = output_head = 0
    for t in model_file.tensors:
        if len(t.shape) < 2 or _NOT_MATMUL.search(t.name) or t.type_name.startswith("I"):
            continue
        if t.name == _OUTPUT_HEAD:
            output_head += t.n_elements
        elif is_routed_expert(t.name) and n_expert and n_used:
            active = t.n_elements * int(n_used) // int(n_expert)
            experts += active
            per_token += active
        else:
            per_token += t.n_elements
    return {"per_token": per_token, "routed_experts_active": experts, "output_head": output_head,
            "expert_fraction": f"{n_used}/{n_expert}" if n_expert else None}
