#include "data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "base/rng.h"
#include "data/idx.h"
#include "device/device.h"
#include "layers/layer.h"

namespace tandem {

InMemoryDataset::InMemoryDataset(Tensor images, Tensor labels)
    : images_(std::move(images)), labels_(std::move(labels)) {
    TANDEM_CHECK_AS(ShapeError, images_.defined() && labels_.defined())
        << "a dataset needs both images and labels";
    TANDEM_CHECK_AS(ShapeError, images_.shape().rank() == 4 && images_.dtype() == DType::f32 &&
                                    images_.layout() == Layout::contiguous)
        << "dataset images must be contiguous f32 N x C x H x W, got " << images_.description();
    const bool values = labels_.dtype() == DType::f32;
    TANDEM_CHECK_AS(ShapeError, (labels_.shape().rank() == 1 && labels_.dtype() == DType::i32) ||
                                    (values && labels_.shape().rank() >= 1 &&
                                     labels_.layout() == Layout::contiguous))
        << "dataset targets must be i32 class labels (N) or contiguous f32 values (N x ...), got "
        << labels_.description();
    TANDEM_CHECK_AS(ShapeError, labels_.shape()[0] == images_.shape()[0])
        << "dataset with " << images_.shape()[0] << " images (" << images_.description() << ") but "
        << labels_.shape()[0] << " targets";
    // gather() copies straight out of host memory.
    TANDEM_CHECK_AS(ShapeError,
                    images_.device().host_accessible() && labels_.device().host_accessible())
        << "dataset tensors must live in host memory, got " << images_.description() << " and "
        << labels_.description();
    if (values) return;
    const int* l = labels_.data<int>();
    for (std::int64_t i = 0; i < labels_.numel(); ++i) {
        TANDEM_CHECK_AS(DataError, l[i] >= 0) << "dataset label " << i + 1 << " is " << l[i];
        classes_ = std::max<std::int64_t>(classes_, std::int64_t(l[i]) + 1);
    }
}

InMemoryDataset InMemoryDataset::from_idx(const std::string& images_path,
                                          const std::string& labels_path, float mean, float std) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(mean) && std::isfinite(std) && std > 0)
        << "dataset normalisation needs a finite mean and std > 0, got mean " << mean << ", std "
        << std;
    const IdxArray images = read_idx(images_path);
    const IdxArray labels = read_idx(labels_path);
    check_idx_pair(images, labels, images_path, labels_path);

    std::vector<std::int64_t> dims = images.dims;
    if (dims.size() == 3) dims.insert(dims.begin() + 1, 1);
    Tensor x = Tensor::empty(Shape(dims), host_device());
    float* px = x.data<float>();
    // Same arithmetic as torchvision's ToTensor + Normalize: p / 255, then (x - mean) / std.
    for (std::size_t i = 0; i < images.bytes.size(); ++i)
        px[i] = (float(images.bytes[i]) / 255.0f - mean) / std;
    Tensor y = Tensor::empty({labels.dims[0]}, host_device(), DType::i32);
    int* py = y.data<int>();
    for (std::size_t i = 0; i < labels.bytes.size(); ++i) py[i] = labels.bytes[i];
    return InMemoryDataset(std::move(x), std::move(y));
}

Shape InMemoryDataset::sample_shape() const {
    const Shape& s = images_.shape();
    return {s[1], s[2], s[3]};
}

std::pair<Tensor, Tensor> InMemoryDataset::gather(std::span<const std::int64_t> indices,
                                                  Device& device, Layout layout) const {
    const auto batch = static_cast<std::int64_t>(indices.size());
    const std::int64_t per_sample = images_.shape().sample_numel();
    for (std::int64_t i : indices)
        TANDEM_CHECK_AS(DataError, i >= 0 && i < size())
            << "sample index " << i << " is out of range for a dataset of " << size() << " samples";
    Tensor images = Tensor::empty(images_.shape().with_batch(batch), device, DType::f32, layout);
    Tensor labels = Tensor::empty(labels_.shape().with_batch(batch), device, labels_.dtype());
    // Straight into the batch where the device's memory is the host's and the layout is the
    // dataset's; through a host buffer (and a layout permutation) otherwise.
    const bool direct = device.host_accessible() && layout == Layout::contiguous;
    // A sample's target as bytes: one i32 label or its f32 values, 4 bytes each either way.
    const auto target_bytes = static_cast<std::size_t>(labels_.shape().sample_numel()) * 4;
    std::vector<float> staged(direct ? 0 : static_cast<std::size_t>(batch * per_sample));
    std::vector<char> staged_labels(direct ? 0 : indices.size() * target_bytes);
    float* x = direct ? images.data<float>() : staged.data();
    char* y = direct ? static_cast<char*>(labels.raw()) : staged_labels.data();
    const float* src = images_.data<float>();
    const char* src_labels = static_cast<const char*>(labels_.raw());
    for (std::int64_t b = 0; b < batch; ++b) {
        const std::int64_t i = indices[static_cast<std::size_t>(b)];
        std::memcpy(x + b * per_sample, src + i * per_sample,
                    static_cast<std::size_t>(per_sample) * sizeof(float));
        std::memcpy(y + b * target_bytes, src_labels + i * target_bytes, target_bytes);
    }
    if (!direct) {
        images.copy_from(staged);
        if (batch > 0)
            device.copy_from_host(labels.raw(), staged_labels.data(), staged_labels.size());
    }
    return {std::move(images), std::move(labels)};
}

std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch,
                                      bool shuffle) {
    TANDEM_CHECK_AS(ConfigError, n >= 0) << "epoch order over " << n << " samples";
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), std::int64_t(0));
    if (!shuffle) return order;
    const std::uint64_t key = rng_key(seed, static_cast<std::uint64_t>(epoch));
    for (std::int64_t i = n - 1; i > 0; --i) {
        // j uniform in [0, i] by Lemire's multiply-shift: no modulo bias worth naming at 64 bits.
        const auto range = static_cast<unsigned __int128>(i + 1);
        const auto j = static_cast<std::int64_t>(
            (static_cast<unsigned __int128>(rng_bits(key, std::uint64_t(i))) * range) >> 64);
        std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
    }
    return order;
}

}  // namespace tandem
