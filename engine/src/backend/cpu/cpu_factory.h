// The CPU backend's factory (backend_registry.cpp makes backends by name).
#pragma once
#include <memory>

#include "backend/backend.h"

namespace ds4 {

// threads <= 0 means the hardware concurrency.
std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace ds4
