// SeqState's host-side bookkeeping (backend.h), shared by every backend.
#include <string>

#include "backend/backend.h"
#include "common/error.h"

namespace ds4 {

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
