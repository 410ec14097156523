// GPU kernels of a layer: what each leaf layer of it launches, per sample, in the classes the
// analytic cost model (analytic_costs.h) gives each its own efficiency.
//
// A GPU runs a layer's leaves one kernel after another: a residual block's batch norms and ReLUs
// do not hide under its convolutions, and a 3x3 convolution runs another algorithm than a 1x1
// one. So the model times leaves, not top-level layers, by class:
//  - conv_winograd: 3x3, stride 1, ungrouped, 16 or more input channels (cuDNN's float32
//    Winograd and FFT algorithms, which do fewer multiplications than the FLOPs counted);
//  - conv_gemm: 1x1 convolutions (a matrix product);
//  - conv_other: every other convolution (strided, large or grouped windows, thin inputs);
//  - gemm: Linear and every other leaf with FLOPs (attention, recurrent layers);
//  - pool: pooling (its backward scatters the gradient: slower than its bytes say);
//  - memory: other leaves without FLOPs (batch norm, activations, adds, concatenation), bound
//    by the bytes they move.
// Flatten and Reshape launch nothing: their output is a view of their input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "layers/layer.h"

namespace tandem {

enum class KernelClass { conv_winograd, conv_gemm, conv_other, gemm, pool, memory };
inline constexpr int kKernelClasses = 6;
std::string_view kernel_class_name(KernelClass c);

// One leaf's forward for one sample.
struct KernelShape {
    std::string name;  // the leaf's name within the layer ("body.conv1")
    std::string kind;  // "Conv2d"
    KernelClass kernel_class = KernelClass::memory;
    double flops = 0;
    // Activations read and written (inputs, output, what it saves), one sample.
    std::size_t activation_bytes = 0;
    std::size_t parameter_bytes = 0;  // weights, read once a pass whatever the batch
    // As a matrix product (a convolution as its implicit GEMM): rows per sample (output pixels;
    // 1 for Linear), columns (output channels or features) and the inner dimension (input
    // channels x window, or input features). 0 for leaves that are no product.
    std::int64_t rows = 0, columns = 0, inner = 0;
    bool launches = true;  // false for a view (Flatten, Reshape): no kernel at all
};

// The leaves of `layer` fed `inputs` (per-sample shapes, batch 1), in forward order. A
// Sequential, Residual or Graph is walked into; any other layer is one kernel.
std::vector<KernelShape> leaf_kernels(Layer& layer, const std::vector<Shape>& inputs);

}  // namespace tandem
