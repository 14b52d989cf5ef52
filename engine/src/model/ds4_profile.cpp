#include "model/ds4_profile.h"

namespace ds4 {

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::embed: return "embed";
        case Phase::hc_pre: return "hc_pre";
        case Phase::attn_proj: return "attn_proj";
        case Phase::attn_state: return "attn_state";
        case Phase::attention: return "attention";
        case Phase::attn_out: return "attn_out";
        case Phase::hc_post: return "hc_post";
        case Phase::router: return "router";
        case Phase::moe: return "moe";
        case Phase::head: return "head";
        case Phase::count: break;
    }
    return "?";
}

}  // namespace ds4
