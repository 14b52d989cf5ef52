// Handing an engine result to numpy without a copy: the vector moves into a heap object the
// returned array owns (freed with the array).
#pragma once
#include <pybind11/numpy.h>

#include <utility>
#include <vector>

namespace py = pybind11;

template <class T>
py::array_t<T> to_array(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
    auto* heap = new std::vector<T>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(std::move(shape), heap->data(), owner);
}
