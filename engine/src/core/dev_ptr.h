// A pointer into memory a backend owns (device memory on a GPU, host memory on
// the CPU). The model code may offset it and pass it on, never dereference it:
// only the backend that allocated it unwraps it with get().
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ds4 {

template <class T>
class Dev {
public:
    Dev() = default;
    explicit Dev(T* p) : p_(p) {}
    // Dev<float> -> Dev<const float>, like the raw pointers.
    template <class U, class = std::enable_if_t<std::is_convertible<U*, T*>::value>>
    Dev(Dev<U> o) : p_(o.get()) {}

    Dev operator+(int64_t k) const { return Dev(p_ + k); }
    explicit operator bool() const { return p_ != nullptr; }
    // For backends only: the raw address in the backend's memory.
    T* get() const { return p_; }

private:
    T* p_ = nullptr;
};

// Memory a backend allocated (Backend::alloc); freed with the object.
class DeviceBuffer {
public:
    virtual ~DeviceBuffer() = default;
    virtual void* data() const = 0;
    virtual size_t bytes() const = 0;
    template <class T>
    Dev<T> as(int64_t offset = 0) const {
        return Dev<T>(static_cast<T*>(data()) + offset);
    }
};

}  // namespace ds4
