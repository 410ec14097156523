// tandem_bench_conv: one convolution's three passes (forward, the input's gradient, the weights'
// gradient) on each CPU implementation, timed apart, and both gradients in one call as a
// training step asks for them: the measurements behind the CPU's choice of implementation for
// each pass (device/cpu/conv2d_cpu.cpp).
//
//   build/tandem_bench_conv --n=64 --c=20 --h=12 --w=12 --out=50 --k=5 [--pad=0] [--stride=1]
//                           [--threads=1]
//                           [--iters=50] [--impls=cpu,dnnl,gemm,winograd]
//
// Channels-last float32 activations on one CPU device of --threads kernel threads. The
// implementations take turns pass by pass, iteration by iteration, so that whatever else the
// machine does in a stretch weighs on all alike; each figure is the median over the iterations
// (ms). `cpu` is the device's default, which picks an implementation per pass. An
// implementation that does not take the shape says why and is left out.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "device/cpu/cpu_device.h"
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"
#include "kernels/kernels.h"
#include "kernels/registry.h"
#include "tensor/tensor.h"

namespace {

using namespace tandem;

struct Args {
    std::int64_t n = 64, c = 20, h = 12, w = 12, out = 50, k = 5, pad = 0, stride = 1;
    std::int64_t threads = 1, iters = 50;
    std::string impls = "cpu,dnnl,gemm,winograd";
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "tandem_bench_conv: %s\nusage: tandem_bench_conv [--n=64] [--c=20] [--h=12] "
                 "[--w=12] [--out=50] [--k=5] [--pad=0] [--stride=1] [--threads=1] [--iters=50] "
                 "[--impls=cpu,dnnl,gemm,winograd]\n",
                 why.c_str());
    std::exit(2);
}

Args parse(int argc, char** argv) {
    Args a;
    const std::map<std::string, std::int64_t*> numbers{
        {"n", &a.n},        {"c", &a.c},           {"h", &a.h},
        {"w", &a.w},        {"out", &a.out},       {"k", &a.k},
        {"pad", &a.pad},    {"stride", &a.stride}, {"threads", &a.threads},
        {"iters", &a.iters}};
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
            usage("expected --name=value, got " + arg);
        const std::string name = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
        if (name == "impls") {
            a.impls = value;
            continue;
        }
        const auto it = numbers.find(name);
        if (it == numbers.end()) usage("no option --" + name);
        char* end = nullptr;
        *it->second = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || *it->second < 0)
            usage("--" + name + " takes a whole number >= 0");
    }
    if (a.iters < 1 || a.n < 1 || a.c < 1 || a.out < 1 || a.k < 1 || a.stride < 1)
        usage("sizes and --iters must be at least 1");
    return a;
}

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) out.push_back(list.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

Tensor random(const Shape& shape, Device& device, Layout layout, std::uint64_t seed) {
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = rng_normal(seed, i);
    return Tensor::from_vector(shape, device, values, layout);
}

}  // namespace

int main(int argc, char** argv) {
    const Args a = parse(argc, argv);
    const Conv2dConfig config{
        a.n,      a.c,      a.h,   a.w,   a.out, a.k,   a.k,
        a.stride, a.stride, a.pad, a.pad, 1,     false, Layout::channels_last};
    if (config.out_h() < 1 || config.out_w() < 1) usage("the filter does not fit the padded input");
    CpuDevice device(0, CpuDeviceOptions{0, static_cast<int>(a.threads)});
    struct Run {
        std::string impl;
        std::unique_ptr<Conv2dKernel> kernel;
        std::vector<double> ms[4];  // forward, data, weights, both gradients in one call
    };
    std::vector<Run> runs;
    try {
        device.worker().run([&] {
            for (const std::string& impl : split(a.impls)) {
                try {
                    runs.push_back({impl,
                                    KernelRegistry::instance().make<Conv2dKernel>(
                                        device, config, impl == "cpu" ? "" : impl),
                                    {}});
                } catch (const Error& e) {
                    std::printf("%s: left out (%s)\n", impl.c_str(), e.what());
                }
            }
            const Tensor x = random(Shape({a.n, a.c, a.h, a.w}), device, Layout::channels_last, 1);
            const Tensor weights =
                random(Shape({a.out, a.c, a.k, a.k}), device, Layout::contiguous, 2);
            const Tensor dy = random(Shape({a.n, a.out, config.out_h(), config.out_w()}), device,
                                     Layout::channels_last, 3);
            Tensor y = Tensor::empty(dy.shape(), device, DType::f32, Layout::channels_last);
            Tensor dx = Tensor::empty(x.shape(), device, DType::f32, Layout::channels_last);
            Tensor dw = Tensor::empty(weights.shape(), device);
            Tensor no_bias;
            for (int it = -3; it < a.iters; ++it)
                for (Run& r : runs)
                    for (int pass = 0; pass < 4; ++pass) {
                        const auto t0 = std::chrono::steady_clock::now();
                        if (pass == 0) r.kernel->forward(x, weights, no_bias, y);
                        if (pass == 1) r.kernel->backward_data(dy, weights, dx);
                        if (pass == 2) r.kernel->backward_weights(x, dy, dw, no_bias);
                        if (pass == 3) r.kernel->backward(x, dy, weights, dx, dw, no_bias);
                        const double ms = std::chrono::duration<double, std::milli>(
                                              std::chrono::steady_clock::now() - t0)
                                              .count();
                        if (it >= 0) r.ms[pass].push_back(ms);
                    }
        });
    } catch (const Error& e) {
        std::fprintf(stderr, "tandem_bench_conv: %s\n", e.what());
        return 1;
    }
    std::printf(
        "conv %lld -> %lld, %lldx%lld, on %lldx%lld, pad %lld, stride %lld, batch %lld, "
        "%lld thread(s), median of %lld (ms)\n",
        static_cast<long long>(a.c), static_cast<long long>(a.out), static_cast<long long>(a.k),
        static_cast<long long>(a.k), static_cast<long long>(a.h), static_cast<long long>(a.w),
        static_cast<long long>(a.pad), static_cast<long long>(a.stride),
        static_cast<long long>(a.n), static_cast<long long>(a.threads),
        static_cast<long long>(a.iters));
    const cpu::Conv2dChoice choice = cpu::choose_conv2d_cpu(config, cpu::dnnl_vector_floats());
    std::printf("cpu (the default) takes: forward %s, data %s, weights %s\n",
                std::string(choice.forward).c_str(), std::string(choice.data).c_str(),
                std::string(choice.weights).c_str());
    // "backward": both gradients in one call, as a training step asks for them (a kernel may
    // share work between them); "step": forward and that.
    std::printf("%-10s %10s %10s %10s %10s %10s\n", "impl", "forward", "data", "weights",
                "backward", "step");
    for (const Run& r : runs) {
        const double f = median(r.ms[0]), b = median(r.ms[3]);
        std::printf("%-10s %10.3f %10.3f %10.3f %10.3f %10.3f\n", r.impl.c_str(), f,
                    median(r.ms[1]), median(r.ms[2]), b, f + b);
    }
    return 0;
}
