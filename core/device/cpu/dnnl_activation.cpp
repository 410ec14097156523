#include "device/cpu/dnnl_activation.h"

namespace tandem::cpu {

ActivationScratch::~ActivationScratch() {
    for (auto& [thread, block] : blocks_) allocator_.deallocate(block.data, block.bytes);
}

void* ActivationScratch::for_calling_thread(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    Block& block = blocks_[std::this_thread::get_id()];
    if (block.bytes < bytes) {
        // Allocate before freeing: a failed allocation (past the cap) leaves the old block.
        void* grown = allocator_.allocate(bytes);
        if (block.data) allocator_.deallocate(block.data, block.bytes);
        block = {grown, bytes};
    }
    return block.data;
}

ActivationScratch& activation_scratch(CpuDevice& device) {
    return device.attachment<ActivationScratch>(
        [&] { return std::make_unique<ActivationScratch>(device.allocator()); });
}

ActivationArg::ActivationArg(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen,
                             const dnnl::engine& engine)
    : plain_(plain, engine, DNNL_MEMORY_NONE) {
    if (chosen == plain) return;
    chosen_ = dnnl::memory(chosen, engine, DNNL_MEMORY_NONE);
    into_chosen_ = dnnl::reorder(plain_, chosen_);
    out_of_chosen_ = dnnl::reorder(chosen_, plain_);
}

std::size_t ActivationArg::scratch_bytes() const {
    return reordered() ? chosen_.get_desc().get_size() : 0;
}

void ActivationArg::place(void* scratch) {
    if (reordered()) chosen_.set_data_handle(scratch);
}

dnnl::memory& ActivationArg::read(CpuDevice& device, const Tensor& t) {
    plain_.set_data_handle(t.raw());
    if (!reordered()) return plain_;
    execute(device, into_chosen_, {{DNNL_ARG_FROM, plain_}, {DNNL_ARG_TO, chosen_}},
            "reorder (activation into the primitive's format)");
    return chosen_;
}

dnnl::memory& ActivationArg::write(const Tensor& t) {
    plain_.set_data_handle(t.raw());
    return reordered() ? chosen_ : plain_;
}

void ActivationArg::finish(CpuDevice& device) {
    if (!reordered()) return;
    execute(device, out_of_chosen_, {{DNNL_ARG_FROM, chosen_}, {DNNL_ARG_TO, plain_}},
            "reorder (activation out of the primitive's format)");
}

bool same_size(const dnnl::memory::desc& chosen, const dnnl::memory::desc& plain) {
    return chosen.get_size() == plain.get_size();
}

}  // namespace tandem::cpu
