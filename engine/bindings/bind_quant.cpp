#include "bindings.h"

void bind_quant(py::module_& m) {
    (void)m;  // filled in by the quant component
}
