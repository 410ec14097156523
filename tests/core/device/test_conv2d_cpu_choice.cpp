// The CPU's default convolution chooses a kernel for each pass from the shape alone
// (conv2d_cpu.cpp): the rules' measured cases, pass by pass.
#include <gtest/gtest.h>

#include <string_view>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

Conv2dConfig conv(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                  std::int64_t pad, std::int64_t hw) {
    return {64, in, hw, hw, out, k, k, stride, stride, pad, pad, 1, true, Layout::channels_last};
}

// On AVX2 (oneDNN's vectors of 8 floats), unless `vector_floats` says otherwise.
void expect_choice(const Conv2dConfig& c, std::string_view forward, std::string_view data,
                   std::string_view weights, int vector_floats = 8) {
    const Conv2dChoice got = choose_conv2d_cpu(c, vector_floats);
    EXPECT_EQ(got.forward, forward) << c.c << " -> " << c.out_channels << " " << c.kernel_h;
    EXPECT_EQ(got.data, data) << c.c << " -> " << c.out_channels << " " << c.kernel_h;
    EXPECT_EQ(got.weights, weights) << c.c << " -> " << c.out_channels << " " << c.kernel_h;
}

TEST(Conv2dCpuChoice, EachPassOnTheKernelItsRuleNames) {
    // LeNet-5's 20 -> 50 5x5 on 12x12: the backward data's tiles would cover the padding of a
    // full convolution (81% of the direct multiplications), so it goes to gemm.
    expect_choice(conv(20, 50, 5, 1, 0, 12), "winograd", "gemm", "winograd");
    // A 3x3 "same" convolution saves in every pass; partial vectors too.
    expect_choice(conv(16, 32, 3, 1, 1, 32), "winograd", "winograd", "winograd");
    expect_choice(conv(20, 36, 3, 1, 1, 16), "winograd", "winograd", "winograd");
    // A first layer: thin_input (oneDNN's forward and backward data).
    expect_choice(conv(1, 20, 5, 1, 0, 28), "thin_input", "thin_input", "thin_input");
    // 1x1: gemm in every pass. A stride-2 3x3 layer of 288 columns whose outputs end inside a
    // vector: gemm's backward passes, oneDNN's forward.
    expect_choice(conv(16, 32, 1, 2, 0, 32), "gemm", "gemm", "gemm");
    expect_choice(conv(32, 50, 3, 2, 1, 16), "dnnl", "gemm", "gemm");
    // Few channels, stride 2: oneDNN.
    expect_choice(conv(8, 8, 3, 2, 1, 16), "dnnl", "dnnl", "dnnl");
    // A 3x3 convolution on a 1x1 input saves nothing by tiles: gemm (576 columns).
    expect_choice(conv(64, 64, 3, 1, 1, 1), "gemm", "gemm", "gemm");
}

// Where oneDNN runs AVX-512 (16 floats a vector), Winograd starts at 32 channels: ResNet-20's
// 16-channel blocks and LeNet-5's 20 -> 50 go to oneDNN (gemm's passes where they pay), and
// 32 or more stay on Winograd.
TEST(Conv2dCpuChoice, OnAvx512WinogradStartsAtTwoVectorsOfChannels) {
    EXPECT_EQ(winograd_min_channels(8), 16);
    EXPECT_EQ(winograd_min_channels(16), 32);
    expect_choice(conv(16, 16, 3, 1, 1, 32), "winograd", "winograd", "winograd", 8);
    expect_choice(conv(16, 16, 3, 1, 1, 32), "dnnl", "dnnl", "dnnl", 16);
    expect_choice(conv(20, 50, 5, 1, 0, 12), "dnnl", "gemm", "gemm", 16);
    expect_choice(conv(32, 32, 3, 1, 1, 16), "winograd", "winograd", "winograd", 16);
    expect_choice(conv(64, 64, 3, 1, 1, 8), "winograd", "winograd", "winograd", 16);
}

}  // namespace
}  // namespace tandem::cpu
