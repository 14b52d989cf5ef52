#include "gguf/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/error.h"

namespace ds4 {

namespace {
// Closes the descriptor on every path out of open(); the mapping outlives it.
struct FdGuard {
    int fd;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};
}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
    FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) {
        throw ArgumentError(path + ": cannot open: " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0) {
        throw ArgumentError(path + ": cannot stat: " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        throw ArgumentError(path + ": not a regular file");
    }
    std::shared_ptr<MappedFile> m(new MappedFile());
    m->path_ = path;
    m->size_ = static_cast<uint64_t>(st.st_size);
    if (m->size_ == 0) return m;  // mmap of length 0 is an error; the parser reports truncation
    if (m->size_ > static_cast<uint64_t>(SIZE_MAX)) {
        throw ArgumentError(path + ": file too large to map on this platform");
    }
    void* base = ::mmap(nullptr, static_cast<size_t>(m->size_), PROT_READ, MAP_PRIVATE, fd.fd, 0);
    if (base == MAP_FAILED) {
        throw ArgumentError(path + ": mmap failed: " + std::strerror(errno));
    }
    m->map_base_ = base;
    m->map_length_ = static_cast<size_t>(m->size_);
    m->data_ = static_cast<const uint8_t*>(base);
    return m;
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(const void* bytes, size_t size,
                                                         const std::string& label) {
    std::shared_ptr<MappedFile> m(new MappedFile());
    m->path_ = label;
    if (size > 0) {
        m->owned_.reset(new uint8_t[size]);
        std::memcpy(m->owned_.get(), bytes, size);
        m->data_ = m->owned_.get();
    }
    m->size_ = size;
    return m;
}

void MappedFile::release_pages() const {
    if (map_base_) (void)::madvise(map_base_, map_length_, MADV_DONTNEED);  // advice: failure changes nothing
}

uint64_t MappedFile::resident_bytes() const {
    if (!map_base_) return size_;
    std::ifstream smaps("/proc/self/smaps");
    if (!smaps) throw UnsupportedError(path_ + ": no /proc/self/smaps to read the mapping's resident size from");
    char start[32];
    std::snprintf(start, sizeof start, "%lx-", (unsigned long)(uintptr_t)map_base_);
    std::string line;
    bool in_mapping = false;
    while (std::getline(smaps, line)) {
        if (!in_mapping) {
            in_mapping = line.rfind(start, 0) == 0;  // the mapping's header line "start-end perms ..."
            continue;
        }
        if (line.rfind("Rss:", 0) == 0) return (uint64_t)std::strtoull(line.c_str() + 4, nullptr, 10) * 1024;  // kB
    }
    throw UnsupportedError(path_ + ": its mapping is not in /proc/self/smaps");
}

MappedFile::~MappedFile() {
    if (map_base_) ::munmap(map_base_, map_length_);
}

}  // namespace ds4
