#include "bindings.h"

void bind_tokenizer(py::module_& m) {
    (void)m;  // filled in by the tokenizer component
}
