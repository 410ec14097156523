// Embedding backward in a fixed order, for deterministic mode (issue 18): no atomics.
//
// Why this scheme: the sums into one table row must happen in one fixed order, and the
// simplest order that needs no sort is the samples' own, which is also the CPU kernel's (so a
// GPU in deterministic mode adds the very floats the CPU adds, in the same order). One thread
// per column alone would leave too few threads for a narrow table, so the table's rows are
// dealt into `parts` classes (row % parts) and thread (part, column) walks every sample in
// order, adding those whose row is of its class: each table element still has exactly one
// writer, which adds its samples in order. The index reads repeat across threads but are the
// same address across a warp (cached); the row updates stay coalesced along the columns.
// Sorting by index and summing segments (the other choice) parallelises further but needs a
// stable sort's scratch and two more launches; it would pay off only for very large batches.
#include "device/cuda/kernels.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

// About this many threads: a few per core of current GPUs, without multiplying the index
// reads (every thread reads all `count` indices) more than needed.
constexpr std::int64_t kOrderedThreads = 1 << 15;

__global__ void embedding_backward_ordered_kernel(const float* ids, const float* dy, float* table,
                                                  std::int64_t count, std::int64_t rows,
                                                  std::int64_t dim, std::int64_t parts) {
    TANDEM_GRID_STRIDE(t, dim * parts) {
        const std::int64_t column = t % dim, part = t / dim;
        for (std::int64_t i = 0; i < count; ++i) {
            const float id = ids[i];
            // Forward has already refused a bad index; skip one here as the atomic kernel does.
            if (!(id >= 0 && id < static_cast<float>(rows) && floorf(id) == id)) continue;
            const std::int64_t row = static_cast<std::int64_t>(id);
            if (row % parts != part) continue;
            table[row * dim + column] += dy[i * dim + column];
        }
    }
}

}  // namespace

void embedding_backward_ordered(const float* ids, const float* dy, float* table, std::int64_t count,
                                std::int64_t rows, std::int64_t dim, cudaStream_t stream) {
    std::int64_t parts = (kOrderedThreads + dim - 1) / dim;
    if (parts > rows) parts = rows;
    if (parts < 1) parts = 1;
    embedding_backward_ordered_kernel<<<blocks_for(dim * parts), kThreads, 0, stream>>>(
        ids, dy, table, count, rows, dim, parts);
}

}  // namespace tandem::cuda::kernels
