#include "plan/gpu_kernels.h"

#include "layers/conv2d.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/merge.h"
#include "layers/residual.h"
#include "layers/sequential.h"

namespace tandem {
namespace {

std::size_t shape_bytes(const Shape& shape) {
    return static_cast<std::size_t>(shape.numel()) * sizeof(float);
}

KernelClass conv_class(const Conv2d& conv) {
    const Conv2dOptions& o = conv.options();
    if (o.kernel_h == 1 && o.kernel_w == 1 && o.groups == 1) return KernelClass::conv_gemm;
    // Winograd's tiles need channels to fill them: the first convolution of an image net (3
    // input channels) runs a direct or implicit-GEMM kernel.
    if (o.kernel_h == 3 && o.kernel_w == 3 && o.stride_h == 1 && o.stride_w == 1 && o.groups == 1 &&
        o.in_channels >= 16)
        return KernelClass::conv_winograd;
    return KernelClass::conv_other;
}

KernelShape leaf(Layer& layer, const std::vector<Shape>& inputs, const std::string& name) {
    KernelShape k;
    k.name = name;
    k.kind = std::string(layer.kind());
    k.flops = node_flops(layer, inputs);
    const MemoryEstimate m = node_memory(layer, inputs);
    for (const Shape& in : inputs) k.activation_bytes += shape_bytes(in);
    k.activation_bytes += m.output_bytes + m.saved_bytes;
    k.parameter_bytes = m.parameter_bytes;
    if (k.kind == "Flatten" || k.kind == "Reshape") {
        k.launches = false;
        k.activation_bytes = 0;
    }
    if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) {
        k.kernel_class = conv_class(*conv);
        const Conv2dOptions& o = conv->options();
        const Shape out = layer.output_shape(inputs.at(0));
        k.rows = out.numel() / o.out_channels;
        k.columns = o.out_channels / o.groups;
        k.inner = o.in_channels / o.groups * o.kernel_h * o.kernel_w;
    } else if (const auto* linear = dynamic_cast<const Linear*>(&layer)) {
        k.kernel_class = KernelClass::gemm;
        k.rows = inputs.at(0).numel() / linear->options().in_features;
        k.columns = linear->options().out_features;
        k.inner = linear->options().in_features;
    } else if (k.flops > 0) {
        k.kernel_class = KernelClass::gemm;
    } else {
        k.kernel_class =
            k.kind.find("Pool") != std::string::npos ? KernelClass::pool : KernelClass::memory;
    }
    return k;
}

std::string child_name(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

void walk(Layer& layer, const std::vector<Shape>& inputs, const std::string& name,
          std::vector<KernelShape>& out) {
    if (auto* chain = dynamic_cast<Sequential*>(&layer)) {
        Shape x = inputs.at(0);
        for (std::size_t i = 0; i < chain->size(); ++i) {
            Layer& child = chain->at(i);
            walk(child, {x}, child_name(name, child.name()), out);
            x = child.output_shape(x);
        }
        return;
    }
    if (auto* block = dynamic_cast<Residual*>(&layer)) {
        walk(block->body(), inputs, child_name(name, "body"), out);
        if (Sequential* shortcut = block->shortcut())
            walk(*shortcut, inputs, child_name(name, "shortcut"), out);
        const Shape y = block->body().output_shape(inputs.at(0));
        walk(block->join(), {y, y}, child_name(name, "add"), out);
        return;
    }
    if (auto* graph = dynamic_cast<Graph*>(&layer)) {
        const std::vector<Shape> values = graph->value_shapes(inputs);
        for (std::size_t i = 0; i < graph->node_count(); ++i) {
            std::vector<Shape> in;
            for (std::size_t v : graph->node_input_values(i)) in.push_back(values.at(v));
            walk(graph->node(i), in, child_name(name, graph->node(i).name()), out);
        }
        return;
    }
    out.push_back(leaf(layer, inputs, name));
}

}  // namespace

std::string_view kernel_class_name(KernelClass c) {
    switch (c) {
        case KernelClass::conv_winograd: return "conv 3x3";
        case KernelClass::conv_gemm: return "conv 1x1";
        case KernelClass::conv_other: return "conv other";
        case KernelClass::gemm: return "gemm";
        case KernelClass::pool: return "pool";
        case KernelClass::memory: return "memory";
    }
    return "?";
}

std::vector<KernelShape> leaf_kernels(Layer& layer, const std::vector<Shape>& inputs) {
    std::vector<KernelShape> out;
    walk(layer, inputs, "", out);
    return out;
}

}  // namespace tandem
