// Python view of speculative decoding (spec/: proposers, the acceptance rule, the loop).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "array_out.h"
#include "bindings.h"
#include "common/error.h"
#include "model/ds4_drafter.h"
#include "model/ds4_session.h"
#include "spec/acceptance.h"
#include "spec/dspark_proposer.h"
#include "spec/scripted_proposer.h"
#include "spec/speculator.h"

namespace {

using F32In = py::array_t<float, py::array::c_style | py::array::forcecast>;

py::dict decision_dict(const ds4::WidthDecision& d) {
    py::dict o;
    o["pos"] = d.pos;
    o["planned"] = d.planned;
    o["verified"] = d.verified;
    o["accepted"] = d.accepted;
    o["reason"] = d.reason;
    o["predicted_speedup"] = d.predicted_speedup;
    return o;
}

py::dict stats_dict(const ds4::SpecStats& s) {
    py::dict o;
    o["steps"] = s.steps;
    o["plain_steps"] = s.plain_steps;
    o["drafts"] = s.drafts;
    o["proposed"] = s.proposed;
    o["verified"] = s.verified;
    o["accepted"] = s.accepted;
    o["emitted"] = s.emitted;
    o["discarded"] = s.discarded;
    o["tried_at"] = s.tried_at;
    o["accepted_at"] = s.accepted_at;
    o["accept_length"] = s.accept_length;
    o["draft_s"] = s.draft_s;
    o["verify_s"] = s.verify_s;
    o["rewind_s"] = s.rewind_s;
    o["sample_s"] = s.sample_s;
    return o;
}

}  // namespace

void bind_spec(py::module_& m) {
    using namespace ds4;
    py::class_<Proposer, std::shared_ptr<Proposer>>(m, "Proposer", "A drafter the speculative loop asks for candidates")
        .def_property_readonly("name", &Proposer::name)
        .def_property_readonly("max_draft", &Proposer::max_draft)
        .def_property_readonly("capture_layers", &Proposer::capture_layers)
        .def_property_readonly("capture_at", [](const Proposer& p) { return p.capture_input() ? "input" : "output"; })
        .def_property_readonly("max_context", &Proposer::max_context);
    py::class_<DsparkProposer, Proposer, std::shared_ptr<DsparkProposer>>(m, "DsparkProposer")
        .def(py::init<std::shared_ptr<Ds4Drafter>>(), py::arg("drafter"));
    py::class_<ScriptedProposer, Proposer, std::shared_ptr<ScriptedProposer>>(
        m, "ScriptedProposer", "Candidates from a known continuation, wrong (token + 1) at the error positions")
        .def(py::init<std::vector<int32_t>, int64_t, std::vector<int64_t>, int32_t, int64_t>(), py::arg("reference"),
             py::arg("start"), py::arg("error_positions"), py::arg("n_vocab"), py::arg("max_draft") = 7);

    py::class_<WidthPolicy>(m, "WidthPolicy", "The width policy (spec/width_policy.h): alone for tests, or carried between generations")
        .def(py::init<int64_t, int64_t>(), py::arg("fixed"), py::arg("max_width"))
        .def(
            "plan",
            [](WidthPolicy& p, int64_t pos, int64_t limit, int64_t drafted, const std::vector<float>& confidence) {
                WidthDecision d = p.plan(pos, limit);
                if (d.planned > 1) p.trim(d, drafted < 0 ? d.planned - 1 : drafted, confidence);
                return decision_dict(d);
            },
            py::arg("pos"), py::arg("limit"), py::arg("drafted") = -1, py::arg("confidence") = std::vector<float>{},
            "plan() then, for a width > 1, trim() with a draft of `drafted` tokens (-1: as many as asked)")
        .def("record_draft", &WidthPolicy::record_draft, py::arg("seconds"))
        .def("record_verify", &WidthPolicy::record_verify, py::arg("width"), py::arg("seconds"))
        .def("record_accepted", &WidthPolicy::record_accepted, py::arg("candidates"), py::arg("accepted"))
        .def("verify_costs", &WidthPolicy::verify_costs)
        .def("acceptance", &WidthPolicy::acceptance);

    py::class_<Ds4Speculator>(m, "Speculator", "The speculative loop over one session (spec/speculator.h)")
        .def(py::init<Ds4Session&, std::shared_ptr<Proposer>, const SamplingParams&, int64_t, const WidthPolicy*>(),
             py::arg("session"), py::arg("proposer"), py::arg("params"), py::arg("width") = 0,
             py::arg("carry") = nullptr, py::keep_alive<1, 2>())
        .def(
            "begin",
            [](Ds4Speculator& sp, const F32In& logits, std::vector<int32_t> history) {
                if (logits.ndim() != 1) throw ArgumentError("speculation: begin() needs the prompt's last logits row");
                py::gil_scoped_release nogil;
                return sp.begin(logits.data(), std::move(history));
            },
            py::arg("logits"), py::arg("history"), "Draw the first token after the prompt (it is pending)")
        .def(
            "step",
            [](Ds4Speculator& sp, int64_t limit, bool want_rows) {
                SpecStep st;
                {
                    py::gil_scoped_release nogil;
                    st = sp.step(limit, want_rows);
                }
                py::dict o;
                o["tokens"] = st.tokens;
                const auto n = (py::ssize_t)st.tokens.size(), vocab = (py::ssize_t)st.rows.size() / n;
                o["rows"] = want_rows ? py::object(to_array(std::move(st.rows), {n, vocab})) : py::object(py::none());
                o["decision"] = decision_dict(st.decision);
                return o;
            },
            py::arg("limit"), py::arg("want_rows") = false,
            "One step: {'tokens': 1..limit emitted, 'rows': float32 [n, vocab] or None, 'decision': {...}}")
        .def("keep_first", &Ds4Speculator::keep_first, py::arg("keep"), py::call_guard<py::gil_scoped_release>())
        .def("replace_pending", &Ds4Speculator::replace_pending, py::arg("token"))
        .def_property_readonly("pending", &Ds4Speculator::pending)
        .def("stats", [](const Ds4Speculator& sp) { return stats_dict(sp.stats()); })
        .def("decisions",
             [](const Ds4Speculator& sp) {
                 py::list l;
                 for (const auto& d : sp.decisions()) l.append(decision_dict(d));
                 return l;
             })
        .def("policy_state", [](const Ds4Speculator& sp) { return WidthPolicy(sp.policy()); },
             "A copy of the width policy (pass it as `carry` to the next generation's Speculator)")
        .def("policy", [](const Ds4Speculator& sp) {
            const WidthPolicy& p = sp.policy();
            py::dict o;
            o["automatic"] = p.automatic();
            o["max_width"] = p.max_width();
            o["verify_costs_s"] = p.verify_costs();
            o["measured"] = p.measured();
            o["draft_cost_s"] = p.draft_cost();
            o["acceptance"] = p.acceptance();
            return o;
        });

    m.def(
        "_spec_accept",
        [](const F32In& rows, const std::vector<int32_t>& draft, const SamplingParams& params,
           std::vector<int32_t> history, int64_t trials) {
            if (rows.ndim() != 2 || rows.shape(0) != (py::ssize_t)draft.size() + 1) {
                throw ArgumentError("_spec_accept: rows must be [len(draft) + 1, vocab]");
            }
            const int64_t V = rows.shape(1);
            Sampler s(params, (int32_t)V);
            std::vector<int64_t> accepted((size_t)trials), next((size_t)trials);
            {
                py::gil_scoped_release nogil;
                for (int64_t t = 0; t < trials; ++t) {
                    const Acceptance a = accept_draft(s, rows.data(), V, draft, history);
                    accepted[(size_t)t] = a.accepted;
                    next[(size_t)t] = a.next;
                }
            }
            return py::make_tuple(accepted, next);
        },
        py::arg("rows"), py::arg("draft"), py::arg("params"), py::arg("history"), py::arg("trials"),
        "The acceptance rule run `trials` times with one seeded sampler: (accepted counts, next tokens)");
}
