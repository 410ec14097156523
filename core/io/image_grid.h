// A grid of images as a PNG: how a recipe shows what a net makes of its inputs (an
// autoencoder's reconstructions beside the originals).
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace tandem {

struct ImageGridOptions {
    int columns = 8;              // images a row
    float low = 0.f, high = 1.f;  // the values drawn black and white (others clamped)
};

// `images`: N x C x H x W (C = 1 grey or 3 RGB, either layout) or N x H x W, f32, any device.
// Written atomically, the folder created. ShapeError for another shape, ConfigError for bad
// options, DataError when the file cannot be written.
void save_image_grid(const std::string& path, const Tensor& images,
                     const ImageGridOptions& options = {});

}  // namespace tandem
