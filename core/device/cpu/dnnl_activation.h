// Activations in the format a oneDNN primitive chooses.
//
// oneDNN's AVX2 and AVX-512 convolutions are fastest on channel-blocked activations (nChw8c,
// nChw16c). A kernel that lets its primitive choose (format_tag::any) reorders the caller's
// plain tensor into the chosen format before the call, or out of it after, through scratch
// memory that every kernel of the device shares: a kernel uses it only within one call.
#pragma once

#include <cstddef>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "device/cpu/dnnl_context.h"

namespace tandem::cpu {

// One scratch block per device and calling thread, grown to the largest request. It comes
// from the device's allocator, so it counts against the device's memory cap.
class ActivationScratch {
public:
    explicit ActivationScratch(Allocator& allocator) : allocator_(allocator) {}
    ~ActivationScratch();
    ActivationScratch(const ActivationScratch&) = delete;
    ActivationScratch& operator=(const ActivationScratch&) = delete;

    // At least `bytes` bytes for the calling thread, valid until its next call.
    void* for_calling_thread(std::size_t bytes);

private:
    struct Block {
        void* data = nullptr;
        std::size_t bytes = 0;
    };
    Allocator& allocator_;
    std::mutex mutex_;
    std::unordered_map<std::thread::id, Block> blocks_;
};

ActivationScratch& activation_scratch(CpuDevice& device);

// One activation argument of a primitive: the caller's plain tensor, and the primitive's
// chosen format when that differs (then the argument is reordered through scratch memory).
class ActivationArg {
public:
    ActivationArg() = default;
    ActivationArg(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen,
                  const dnnl::engine& engine);

    // Bytes of scratch the chosen format needs: 0 when the primitive reads the plain tensor.
    std::size_t scratch_bytes() const;
    // Where in scratch memory the chosen format lives for the coming call.
    void place(void* scratch);

    // `t` as the primitive reads it: reordered into scratch, or `t` itself.
    dnnl::memory& read(CpuDevice& device, const Tensor& t);
    // Where the primitive finds `t`, with no reorder: where it writes `t` (finish() then
    // reorders it into `t` when that was scratch), or reads it when another argument of the
    // same chosen format, placed at the same scratch, has just read it in.
    dnnl::memory& at(const Tensor& t);
    void finish(CpuDevice& device);

private:
    bool reordered() const { return bool(chosen_); }

    dnnl::memory plain_, chosen_;
    dnnl::reorder into_chosen_, out_of_chosen_;
};

// Whether `chosen` holds a tensor of `plain`'s shape without padding (a blocked format over
// channels that are a multiple of its block). Padded formats spend their padding's share of
// the work and of the reorders on nothing.
bool same_size(const dnnl::memory::desc& chosen, const dnnl::memory::desc& plain);

}  // namespace tandem::cpu
