#include "data/batch_slab.h"

#include <cstdio>
#include <cstring>
#include <utility>

#include "data/data_source.h"
#include "device/device.h"
#include "layers/layer.h"

namespace tandem {
namespace {

// Where batch memory the host writes lives: the device itself when the host can write it (no
// copy at all), else host memory the device copies from directly (a GPU's pinned memory: one
// DMA copy per batch), else plain host memory.
Device& writable_home(Device& device) {
    if (device.host_accessible()) return device;
    Device* pinned = device.pinned_host();
    return pinned != nullptr ? *pinned : host_device();
}

Tensor batch_memory(std::int64_t batch, const Shape& sample, Device& device, Layout layout) {
    const Shape shape{batch, sample[0], sample[1], sample[2]};
    Device& home = writable_home(device);
    if (&home == device.pinned_host()) {
        // Pinned memory only makes the copy faster: past its cap, plain host memory serves.
        try {
            return Tensor::empty(shape, home, DType::f32, layout);
        } catch (const DeviceMemoryError&) {
            return Tensor::empty(shape, host_device(), DType::f32, layout);
        }
    }
    return Tensor::empty(shape, home, DType::f32, layout);
}

}  // namespace

BatchSlab::BatchSlab(std::int64_t chunk, std::int64_t count, std::int64_t batch,
                     const Shape& sample, Device& device, Layout layout)
    : chunk_(chunk), sample_(sample), per_sample_(sample.rank() == 3 ? sample.numel() : 0),
      slots_(std::size_t(count)), remaining_(count) {
    if (per_sample_ > 0) images_ = batch_memory(batch, sample, device, layout);
}

float* BatchSlab::pixels(std::int64_t i) {
    return static_cast<float*>(images_.raw()) + i * per_sample_;
}

BatchAssembler::BatchAssembler(const LoaderOptions& options, Device& device, std::int64_t classes,
                               std::atomic<std::int64_t>& skipped, CorruptSamples& corrupt,
                               Emit emit)
    : options_(options), device_(device), classes_(classes), skipped_(skipped), corrupt_(corrupt),
      emit_(std::move(emit)) {}

bool BatchAssembler::check(const SlotRecord& s, const BatchSlab& slab) {
    if (!s.corrupt.empty()) {
        TANDEM_CHECK_AS(CorruptSampleError, !options_.strict)
            << s.corrupt << " (strict: corrupt samples are errors)";
        skipped_ += 1;
        if (corrupt_.add(s.index) && !options_.quiet)
            std::fprintf(stderr, "warning: skipping corrupt sample: %s\n", s.corrupt.c_str());
        return false;
    }
    if (!s.error.empty()) throw DataError(s.error);
    TANDEM_CHECK_AS(DataError, slab.fits(s))
        << "image '" << s.key << "' is " << s.shape.to_string()
        << " after its transforms, the batch holds " << slab.sample_shape().to_string()
        << " images (the shape of the epoch's first image); give a crop (or resize) so every "
           "image has one size";
    TANDEM_CHECK_AS(DataError, s.label >= 0 && s.label < classes_)
        << "sample '" << s.key << "' has label " << s.label << ", out of range for " << classes_
        << " classes";
    return true;
}

bool BatchAssembler::add(BatchSlab& slab) {
    const std::int64_t b = options_.batch;
    bool whole = packed_indices_.empty() && slab.count() == b;
    for (std::int64_t i = 0; whole && i < slab.count(); ++i)
        whole = slab.slot(i).corrupt.empty() && slab.fits(slab.slot(i));
    if (whole) {  // the slab is the batch
        std::vector<std::int64_t> indices(std::size_t(b), 0);
        std::vector<std::int32_t> labels(std::size_t(b), 0);
        for (std::int64_t i = 0; i < b; ++i) {
            check(slab.slot(i), slab);
            indices[std::size_t(i)] = slab.slot(i).index;
            labels[std::size_t(i)] = slab.slot(i).label;
        }
        return ship(std::move(slab.images()), std::move(indices), std::move(labels), b);
    }
    // A hole here or earlier in the epoch, or its last (partial) chunk: pack the good samples,
    // in order.
    for (std::int64_t i = 0; i < slab.count(); ++i) {
        const SlotRecord& s = slab.slot(i);
        if (!check(s, slab)) continue;
        if (packed_indices_.empty())
            packing_ = batch_memory(b, slab.sample_shape(), device_, options_.layout);
        const std::size_t per_sample = std::size_t(slab.sample_shape().numel());
        std::memcpy(static_cast<float*>(packing_.raw()) + packed_indices_.size() * per_sample,
                    slab.pixels(i), per_sample * sizeof(float));
        packed_indices_.push_back(s.index);
        packed_labels_.push_back(s.label);
        if (std::int64_t(packed_indices_.size()) == b &&
            !ship(std::move(packing_), std::exchange(packed_indices_, {}),
                  std::exchange(packed_labels_, {}), b))
            return false;
    }
    return true;
}

bool BatchAssembler::finish() {
    const std::int64_t count = std::int64_t(packed_indices_.size());
    if (count == 0 || options_.last == LastBatch::drop) return true;
    return ship(std::move(packing_), std::exchange(packed_indices_, {}),
                std::exchange(packed_labels_, {}), count);
}

bool BatchAssembler::ship(Tensor images, std::vector<std::int64_t> indices,
                          std::vector<std::int32_t> labels, std::int64_t count) {
    const std::int64_t b = options_.batch;
    const Shape& full = images.shape();
    const std::size_t row_bytes = images.nbytes() / std::size_t(b);
    auto* rows = static_cast<char*>(images.raw());
    std::int64_t n = count;
    if (count < b && options_.last == LastBatch::pad) {  // repeat the first samples
        labels.resize(std::size_t(b));
        indices.resize(std::size_t(b));
        for (std::int64_t j = count; j < b; ++j) {
            std::memcpy(rows + j * row_bytes, rows + (j % count) * row_bytes, row_bytes);
            labels[std::size_t(j)] = labels[std::size_t(j % count)];
            indices[std::size_t(j)] = indices[std::size_t(j % count)];
        }
        n = b;
    }
    const bool direct = device_.host_accessible();
    Batch batch;
    if (direct && n == b) {
        batch.images = std::move(images);
    } else {
        batch.images = Tensor::empty(Shape{n, full[1], full[2], full[3]}, device_, DType::f32,
                                     options_.layout);
        if (direct)
            std::memcpy(batch.images.raw(), rows, row_bytes * std::size_t(n));
        else
            device_.copy_from_host(batch.images.raw(), rows, row_bytes * std::size_t(n));
    }
    batch.labels = Tensor::empty({n}, device_, DType::i32);
    const std::size_t label_bytes = std::size_t(n) * sizeof(std::int32_t);
    if (direct)
        std::memcpy(batch.labels.raw(), labels.data(), label_bytes);
    else
        device_.copy_from_host(batch.labels.raw(), labels.data(), label_bytes);
    batch.count = count;
    batch.indices = std::move(indices);
    return emit_(std::move(batch));
}

}  // namespace tandem
