// GpuBackend: ds4::Backend on one CUDA or HIP device (device 0), one stream. Host code
// only: memory, the weight table, argument checks and kernel launches (gpu_kernels.h).
// Operations are enqueued on the stream in issue order; upload, download and the kernels
// are asynchronous and synchronize() waits for all of them. Every operation this
// backend does not have yet throws UnsupportedError naming it (no silent CPU fallback).
//
// Threads: calls from several host threads (two sessions) enqueue on the one stream,
// which the runtime allows; each session's calls stay in its own issue order.
#include "backend/gpu/gpu_compat.h"

#if DS4_GPU_HOST_CODE
#include <memory>
#include <string>

#include "backend/gpu/gpu_backend.h"
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"
#include "backend/gpu/gpu_weights.h"

namespace ds4 {

namespace {

constexpr uint32_t kTypeF32 = 0, kTypeF16 = 1, kTypeQ8_0 = 8;

[[noreturn]] void not_implemented(const char* op) {
    throw UnsupportedError(DS4_GPU_WHO ": operation '" + std::string(op) + "' is not implemented yet");
}

std::string kind_upper() { return DS4_GPU_KIND_NAME[0] == 'c' ? "CUDA" : "HIP"; }

class GpuBuffer final : public DeviceBuffer {
public:
    GpuBuffer(void* p, size_t n) : p_(p), n_(n) {}
    ~GpuBuffer() override {
        if (p_) (void)DS4_GPU_RT(Free)(p_);  // cannot throw here; a failed free means the context is gone
    }
    void* data() const override { return p_; }
    size_t bytes() const override { return n_; }

private:
    void* p_;
    size_t n_;
};

class GpuBackend final : public Backend {
public:
    explicit GpuBackend(int device) {
        DS4_GPU_CHECK(SetDevice, device);
        ds4_gpu_device_prop_t prop{};
        DS4_GPU_CHECK(GetDeviceProperties, &prop, device);
        name_ = std::string(DS4_GPU_KIND_NAME "(") + prop.name;
#if defined(__HIP_CPU_RT__)
        name_ += ", HIP-CPU";  // the test runtime: kernels run on the host
#elif defined(__HIPCC__)
        name_ += std::string(", ") + prop.gcnArchName;
#endif
        name_ += ")";
        DS4_GPU_CHECK(StreamCreateWithFlags, &stream_, ds4GpuStreamNonBlocking);
    }
    ~GpuBackend() override {
        weights_.reset();  // frees device memory; the runtime waits for pending work
        if (stream_) (void)DS4_GPU_RT(StreamDestroy)(stream_);
    }

    std::string name() const override { return name_; }
    std::string kind() const override { return DS4_GPU_KIND_NAME; }
    int n_threads() const override { return 1; }

    // ---- Memory ----
    std::unique_ptr<DeviceBuffer> alloc(size_t bytes) override {
        void* p = nullptr;
        if (bytes > 0) gpu_check(DS4_GPU_RT(Malloc)(&p, bytes), DS4_GPU_RT_PREFIX "Malloc", std::to_string(bytes) + " bytes");
        return std::make_unique<GpuBuffer>(p, bytes);
    }
    // A pageable `src` may be reused once upload returns (the runtime stages it); a
    // download into pageable memory completes before the call returns. Neither holds on
    // to the caller's memory, so no pinned staging is needed for correctness.
    void upload(void* dst, const void* src, size_t bytes) override {
        if (bytes == 0) return;
        check_ptrs("upload", dst, src);
        DS4_GPU_CHECK(MemcpyAsync, dst, src, bytes, ds4GpuMemcpyHostToDevice, stream_);
    }
    void download(void* dst, const void* src, size_t bytes) override {
        if (bytes == 0) return;
        check_ptrs("download", dst, src);
        DS4_GPU_CHECK(MemcpyAsync, dst, src, bytes, ds4GpuMemcpyDeviceToHost, stream_);
    }
    void synchronize() override { DS4_GPU_CHECK(StreamSynchronize, stream_); }

    void bind_weights(const WeightTable& table) override {
        auto store = std::make_unique<gpu::WeightStore>();
        store->bind(table, stream_);
        weights_ = std::move(store);
    }

    // ---- What this backend computes ----
    void matmul(const WeightView& W, int64_t row0, int64_t n_rows, Dev<const float> X, int64_t ldx, int ncols,
                Dev<float> Y, int64_t ldy) override {
        if (row0 < 0 || n_rows < 0 || row0 + n_rows > W.n_rows()) {
            throw ArgumentError(DS4_GPU_WHO ": matmul: tensor '" + W.name + "': rows " + std::to_string(row0) + ".." +
                                std::to_string(row0 + n_rows) + " outside its " + std::to_string(W.n_rows()) +
                                " rows");
        }
        if (ncols < 0) throw ArgumentError(DS4_GPU_WHO ": matmul: negative column count " + std::to_string(ncols));
        if (ncols > 1 && (ldx < W.n_in() || ldy < n_rows)) {
            throw ArgumentError(DS4_GPU_WHO ": matmul: tensor '" + W.name + "': strides ldx " + std::to_string(ldx) +
                                ", ldy " + std::to_string(ldy) + " are shorter than a column (" +
                                std::to_string(W.n_in()) + " in, " + std::to_string(n_rows) + " out)");
        }
        if (n_rows == 0 || ncols == 0) return;
        gpu::RowFormat fmt;
        switch (W.type) {
            case kTypeF32: fmt = gpu::RowFormat::F32; break;
            case kTypeF16: fmt = gpu::RowFormat::F16; break;
            case kTypeQ8_0:
                fmt = gpu::RowFormat::Q8_0;
                if (W.n_in() % 32 != 0) throw ArgumentError(DS4_GPU_WHO ": matmul: Q8_0 tensor '" + W.name + "' rows are not whole blocks");
                break;
            default:
                throw UnsupportedError(DS4_GPU_WHO ": operation 'matmul' is not implemented yet for tensor '" +
                                       W.name + "' of ggml type " + std::to_string(W.type) +
                                       " (this backend has F32, F16 and Q8_0)");
        }
        const gpu::DeviceWeight& dw = weights().get(W, "matmul");
        gpu::launch_matmul(fmt, dw.data + (uint64_t)row0 * W.row_bytes, W.row_bytes, W.n_in(), n_rows, X.get(), ldx,
                           ncols, Y.get(), ldy, stream_);
    }

    void rms_norm(Dev<const float> x, const WeightView* w, int64_t n, int64_t n_rows, double eps,
                  Dev<float> y) override {
        const float* wf = nullptr;
        if (w) {
            if (!w->vector || w->n_elements() != n) {
                throw ArgumentError(DS4_GPU_WHO ": rms_norm: weight '" + w->name + "' is not a vector view of " +
                                    std::to_string(n) + " values (" + std::to_string(w->n_elements()) + ")");
            }
            wf = weights().get(*w, "rms_norm").f32;
            if (!wf) {
                throw UnsupportedError(DS4_GPU_WHO ": operation 'rms_norm' is not implemented yet for weight '" +
                                       w->name + "' of ggml type " + std::to_string(w->type) +
                                       " (float copies are made of F32, F16 and BF16 vectors)");
            }
        }
        gpu::launch_rms_norm(x.get(), wf, n, n_rows, eps, y.get(), stream_);
    }

    void scale(Dev<float> x, int64_t n, double s) override { gpu::launch_scale(x.get(), n, s, stream_); }

    void copy(Dev<float> dst, Dev<const float> src, int64_t n) override {
        if (n <= 0) return;
        DS4_GPU_CHECK(MemcpyAsync, dst.get(), src.get(), (size_t)n * sizeof(float), ds4GpuMemcpyDeviceToDevice,
                      stream_);
    }

    // ---- Not yet on this backend: each throws naming itself ----
    void embed(const WeightView&, Dev<const int32_t>, int64_t, int64_t, Dev<float>) override { not_implemented("embed"); }
    void rope_tail(Dev<float>, int64_t, int64_t, int64_t, int64_t, const RopeSpec&, bool) override {
        not_implemented("rope_tail");
    }
    void fp8_kv_round_trip(Dev<float>, int64_t, int64_t, int64_t) override { not_implemented("fp8_kv_round_trip"); }
    void indexer_transform(Dev<float>, int64_t, int64_t, bool) override { not_implemented("indexer_transform"); }
    void hc_pre(Dev<const float>, int64_t, int64_t, int64_t, const WeightView&, const WeightView&, const WeightView&,
                int64_t, double, double, Dev<float>, Dev<double>) override {
        not_implemented("hc_pre");
    }
    void hc_post(Dev<const float>, Dev<const float>, int64_t, int64_t, int64_t, Dev<const double>,
                 Dev<float>) override {
        not_implemented("hc_post");
    }
    void hc_head(Dev<const float>, int64_t, int64_t, int64_t, const WeightView&, const WeightView&, const WeightView&,
                 double, double, Dev<float>) override {
        not_implemented("hc_head");
    }
    void hc_mean(Dev<const float>, int64_t, int64_t, int64_t, Dev<float>, int64_t) override {
        not_implemented("hc_mean");
    }
    void route(Dev<const float>, Dev<const int32_t>, int64_t, const RouteParams&, Dev<int32_t>, Dev<float>) override {
        not_implemented("route");
    }
    void moe(const MoeWeights&, Dev<const float>, int64_t, Dev<const int32_t>, Dev<const float>, int64_t, double,
             double, Dev<float>) override {
        not_implemented("moe");
    }
    std::unique_ptr<SeqState> new_seq_state(const SeqShape&) override { not_implemented("new_seq_state"); }
    std::unique_ptr<SeqState> seq_state_from_image(const SeqShape&, const SeqStateImage&) override {
        not_implemented("seq_state_from_image");
    }
    void kv_store(SeqState&, int64_t, int64_t, int64_t, Dev<const float>) override { not_implemented("kv_store"); }
    void compress(SeqState&, int64_t, int64_t, int64_t, Dev<const float>, Dev<const float>, int64_t,
                  const CompressorParams&) override {
        not_implemented("compress");
    }
    void indexer_select(const SeqState&, int64_t, int64_t, Dev<const float>, Dev<const float>, int64_t, int64_t,
                        int64_t, int64_t, Dev<int32_t>) override {
        not_implemented("indexer_select");
    }
    void attention(const SeqState&, int64_t, int64_t, int64_t, Dev<const float>, int64_t, int64_t, const CompRowView&,
                   const WeightView&, const RopeSpec&, Dev<float>) override {
        not_implemented("attention");
    }
    void attention_rows(Dev<const float>, int64_t, int64_t, int64_t, Dev<const float>, int64_t, const WeightView&,
                        const RopeSpec&, int64_t, Dev<float>) override {
        not_implemented("attention_rows");
    }

private:
    const gpu::WeightStore& weights() const {
        if (!weights_) throw ArgumentError(DS4_GPU_WHO ": no weights bound (bind_weights is called once per model)");
        return *weights_;
    }
    static void check_ptrs(const char* op, const void* dst, const void* src) {
        if (!dst || !src) throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + " with a null pointer");
    }

    std::string name_;
    ds4_gpu_stream_t stream_ = nullptr;
    std::unique_ptr<gpu::WeightStore> weights_;
};

}  // namespace

const char* gpu_backend_kind() { return DS4_GPU_KIND_NAME; }

std::string gpu_device_status() {
    int n = 0;
    const ds4_gpu_error_t rc = DS4_GPU_RT(GetDeviceCount)(&n);
    if (rc != DS4_GPU_RT(Success)) {
        (void)DS4_GPU_RT(GetLastError)();  // do not leave the error for a later launch check
        return "no " + kind_upper() + " device: " + gpu_error_text(rc, DS4_GPU_RT_PREFIX "GetDeviceCount", "");
    }
    if (n == 0) return "no " + kind_upper() + " device: " DS4_GPU_RT_PREFIX "GetDeviceCount found none";
    return "ok";
}

std::unique_ptr<Backend> make_gpu_backend() {
    const std::string status = gpu_device_status();
    if (status != "ok") throw UnsupportedError(DS4_GPU_WHO ": " + status);
    return std::make_unique<GpuBackend>(0);
}

}  // namespace ds4
#endif
