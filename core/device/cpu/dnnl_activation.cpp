#include "device/cpu/dnnl_activation.h"

#include <vector>

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

namespace {

// The step in elements between neighbours along each dimension of a blocked layout, where that
// is one number: a dimension whose whole extent sits in its one inner block (nChw16c's channels
// when there are 16) steps by the block's inner stride. Empty for a layout that splits a
// dimension between outer and inner blocks.
std::vector<std::int64_t> element_steps(const dnnl::memory::desc& m) {
    if (m.data.format_kind != dnnl_blocked) return {};
    const auto& blocking = m.data.format_desc.blocking;
    std::vector<std::int64_t> steps(blocking.strides, blocking.strides + m.data.ndims);
    std::int64_t inner = 1;
    std::vector<bool> blocked(static_cast<std::size_t>(m.data.ndims), false);
    for (int i = blocking.inner_nblks - 1; i >= 0; --i) {
        const int d = blocking.inner_idxs[i];
        if (blocked[static_cast<std::size_t>(d)] || blocking.inner_blks[i] != m.data.dims[d])
            return {};
        blocked[static_cast<std::size_t>(d)] = true;
        steps[static_cast<std::size_t>(d)] = inner;
        inner *= blocking.inner_blks[i];
    }
    return steps;
}

// Whether `a` and `b` put every element at the same place: the same type, dimensions and size,
// and the same step along each dimension longer than 1. oneDNN's nChw16c over 16 channels is
// nhwc under another name (ResNet-20's first stage on AVX-512): reordering one into the other
// copied the tensor for nothing.
bool same_placement(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
    if (a.data.data_type != b.data.data_type || a.dims() != b.dims() ||
        a.get_size() != b.get_size())
        return false;
    const auto sa = element_steps(a), sb = element_steps(b);
    if (sa.empty() || sb.empty()) return false;
    for (int d = 0; d < a.data.ndims; ++d)
        if (a.data.dims[d] > 1 &&
            sa[static_cast<std::size_t>(d)] != sb[static_cast<std::size_t>(d)])
            return false;
    return true;
}

}  // namespace

ActivationArg::ActivationArg(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen,
                             const dnnl::engine& engine)
    : plain_(plain, engine, DNNL_MEMORY_NONE) {
    if (chosen == plain) return;
    // The primitive reads or writes our tensor itself, described as it chose.
    if (same_placement(chosen, plain)) {
        plain_ = dnnl::memory(chosen, engine, DNNL_MEMORY_NONE);
        return;
    }
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

dnnl::memory& ActivationArg::at(const Tensor& t) {
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
