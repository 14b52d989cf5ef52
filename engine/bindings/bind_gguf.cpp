#include "bindings.h"

void bind_gguf(py::module_& m) {
    (void)m;  // filled in by the gguf component
}
