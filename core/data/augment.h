// Augmentation of in-memory image batches: random horizontal flips and random crops from a
// padded image (the classic CIFAR/Fashion-MNIST recipe).
//
// Every random choice is a function of (seed, epoch, sample index) alone, so a batch is the
// same whatever thread or order produced it, and a resumed run sees the same images.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace tandem {

struct AugmentOptions {
    bool flip = false;          // mirror left-right with probability 1/2
    std::int64_t crop_pad = 0;  // shift by up to this many pixels each way, filling with `fill`
    float fill = 0.f;           // value of the pixels shifted in (black, after normalisation)
};

// Augments `images` (N x C x H x W, f32, host-readable, contiguous) in place; sample k of the
// batch is data-set sample `sample_ids[k]`.
void augment_batch(Tensor& images, std::span<const std::int64_t> sample_ids,
                   const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch);

}  // namespace tandem
