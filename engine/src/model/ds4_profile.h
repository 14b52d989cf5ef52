// Optional wall-clock accounting of a session's forward passes by phase, so a
// slow prefill or decode can be traced to the part of the layer that costs it
// (`Session.profile = True`, or DS4KIT_PROFILE=1 for every new session).
// Off, a scope costs one branch; on, two steady_clock reads.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>

namespace ds4 {

enum class Phase : int {
    embed,       // token embedding rows
    hc_pre,      // hyper-connection mix, Sinkhorn and collapse of both sublayers, with their norms
    attn_proj,   // q / kv / compressor projections and their norms
    attn_state,  // RoPE, KV rounding, ring and compressor updates, indexer selection
    attention,   // scores, softmax with sinks, weighted sums, inverse RoPE
    attn_out,    // grouped output projection
    hc_post,     // hyper-connection recombination of both sublayers
    router,      // gate logits and expert selection
    moe,         // routed and shared experts
    head,        // output HC head, norm and LM head
    count
};

const char* phase_name(Phase p);

class PhaseClock {
public:
    bool enabled = false;
    std::array<double, (size_t)Phase::count> seconds{};
    void reset() { seconds.fill(0.0); }
};

class PhaseScope {
public:
    PhaseScope(PhaseClock& clock, Phase phase) : clock_(clock), phase_(phase) {
        if (clock_.enabled) t0_ = std::chrono::steady_clock::now();
    }
    ~PhaseScope() { stop(); }
    // Ends the scope early (later calls do nothing).
    void stop() {
        if (clock_.enabled && !stopped_) {
            clock_.seconds[(size_t)phase_] +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        }
        stopped_ = true;
    }
    PhaseScope(const PhaseScope&) = delete;
    PhaseScope& operator=(const PhaseScope&) = delete;

private:
    PhaseClock& clock_;
    Phase phase_;
    bool stopped_ = false;
    std::chrono::steady_clock::time_point t0_{};
};

}  // namespace ds4
