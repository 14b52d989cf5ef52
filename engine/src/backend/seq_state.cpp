// SeqState's host-side bookkeeping (backend.h), shared by every backend.
#include <string>

#include "backend/backend.h"
#include "common/error.h"

namespace ds4 {

SeqState::SeqState(const SeqShape& s) : shape_(s) {
    if (s.max_block < 1) throw ArgumentError("sequence state needs max_block >= 1");
    if (s.max_rewind < s.max_block) {
        throw ArgumentError("sequence state needs max_rewind (" + std::to_string(s.max_rewind) +
                            ") >= max_block (" + std::to_string(s.max_block) + ")");
    }
}


void SeqState::rewind_to(int64_t p) {
    if (p > pos_ || p < rewind_floor()) {
        throw ArgumentError("rewind to position " + std::to_string(p) + ": the state holds positions " +
                            std::to_string(rewind_floor()) + ".." + std::to_string(pos_) +
                            " back from the highest stored (" + std::to_string(hwm_) + "; at most " +
                            std::to_string(shape_.max_rewind) + " positions can be taken back)");
    }
    pos_ = p;
    drop_after(p);
}

}  // namespace ds4
