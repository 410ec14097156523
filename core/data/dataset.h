// InMemoryDataset: an image set held on the host with a target per image, from which batches
// are gathered onto a device. The targets are class labels (i32 N, for CrossEntropy) or values
// (f32 N x ..., for MSE or BCEWithLogits). Small sets (MNIST, Fashion-MNIST, CIFAR) fit in
// memory whole; large ones go through the streaming loaders instead.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace tandem {

class Device;

class InMemoryDataset {
public:
    // `images`: host f32 N x C x H x W (contiguous); `labels`: host i32 N, each >= 0, or host f32
    // N x ... (contiguous). ShapeError / DataError when they do not fit together.
    InMemoryDataset(Tensor images, Tensor labels);

    // An idx image file (N x H x W, or N x C x H x W) and an idx label file (N), each maybe
    // gzipped: pixels become (p / 255 - mean) / std. DataError naming both files when the counts
    // differ; ConfigError for std <= 0.
    static InMemoryDataset from_idx(const std::string& images_path, const std::string& labels_path,
                                    float mean, float std);

    std::int64_t size() const { return images_.shape()[0]; }
    // max label + 1 (0 for an empty set or f32 targets).
    std::int64_t classes() const { return classes_; }
    // C x H x W.
    Shape sample_shape() const;
    const Tensor& images() const { return images_; }
    const Tensor& labels() const { return labels_; }

    // Copies the samples at `indices` (in that order, repeats allowed) into a new batch on
    // `device`: images B x C x H x W in `layout`, labels i32 B (or f32 B x ...). DataError for an
    // index out of range.
    std::pair<Tensor, Tensor> gather(std::span<const std::int64_t> indices, Device& device,
                                     Layout layout) const;

private:
    Tensor images_;
    Tensor labels_;
    std::int64_t classes_ = 0;
};

// The order in which an epoch visits 0 .. n-1: the identity without shuffle, else a
// Fisher-Yates permutation drawn from rng_key(seed, epoch), the same on every run and machine.
std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch,
                                      bool shuffle);

}  // namespace tandem
