#include "device/device_schema.h"

namespace tandem {

namespace {

// More kernel threads than any machine has cores is a mistake, not a request.
constexpr double kMaxKernelThreads = 1024;

OptionSpec memory_cap(std::string_view otherwise) {
    return {.name = "memory",
            .type = OptionType::size,
            .help = "the device's memory cap: '512MB', '2GiB' or a byte count",
            .fallback = 0.0,
            .default_note = otherwise,
            .note = "leave it out for none"};
}

OptionSchema make_cpu_schema() {
    return {"devices.cpu",
            "T.devices",
            {
                memory_cap("none: the machine's memory"),
                {.name = "threads",
                 .type = OptionType::integer,
                 .help = "the device's kernel threads",
                 .fallback = 0.0,
                 .low = 0,
                 .high = kMaxKernelThreads,
                 .note = "0: every core"},
            }};
}

OptionSchema make_cuda_schema() {
    return {"devices.cuda",
            "T.devices",
            {
                memory_cap("95% of the GPU's free memory"),
                {.name = "workspace",
                 .type = OptionType::size,
                 .help = "cuDNN's workspace budget",
                 .fallback = 0.0,
                 .default_note = "a sixteenth of the cap, 64 MiB to 8 GiB",
                 .note = "leave it out for the default"},
                {.name = "benchmark",
                 .type = OptionType::flag,
                 .help = "time the convolution algorithms instead of taking cuDNN's heuristics",
                 .fallback = false},
                {.name = "tf32",
                 .type = OptionType::flag,
                 .help = "TF32 tensor cores for convolutions and Linear (Ampere and later: about "
                         "1e-3 relative from float32)",
                 .fallback = false},
            }};
}

}  // namespace

const OptionSchema& cpu_device_option_schema() {
    static const OptionSchema schema = make_cpu_schema();
    return schema;
}

const OptionSchema& cuda_device_option_schema() {
    static const OptionSchema schema = make_cuda_schema();
    return schema;
}

}  // namespace tandem
