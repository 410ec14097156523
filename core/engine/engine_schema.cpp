#include "engine/engine_schema.h"

#include <limits>

#include "device/precision.h"
#include "optim/loss_scaler.h"
#include "tensor/tensor.h"

namespace tandem {
namespace {

OptionSchema make_engine_schema() {
    const std::vector<std::string_view> layouts{layout_name(Layout::contiguous),
                                                layout_name(Layout::channels_last)};
    // The precisions Tandem trains in (the planner prices tf32 and fp16 as well).
    const std::vector<std::string_view> precisions{precision_name(Precision::fp32),
                                                   precision_name(Precision::bf16),
                                                   precision_name(Precision::fp16)};
    std::vector<std::string_view> loss_scales;
    for (const auto& mode : kLossScaleModeNames) loss_scales.push_back(mode.name);
    const LossScaleOptions scaling;
    return {
        "engine",
        "T.Engine",
        {
            {.name = "net",
             .type = OptionType::object,
             .help = "the layers to train: a nn.Sequential, or one layer (a graph) trained as its "
                     "only entry",
             .object = "tandem.Layer",
             .expected = "a net (nn.Sequential{...})",
             .required = true},
            {.name = "loss",
             .type = OptionType::object,
             .help = "the loss on the net's output and the batch's targets",
             .default_note = "nn.CrossEntropy()",
             .object = "tandem.Loss",
             .expected = "a loss (nn.CrossEntropy(), nn.MSE(), nn.BCEWithLogits())"},
            {.name = "devices",
             .type = OptionType::objects,
             .help = "the devices the stages and groups run on (groups x stages of them)",
             .default_note = "T.devices('cpu', 1)",
             .object = "tandem.Device",
             .expected = "a list of devices from T.devices"},
            {.name = "optim",
             .type = OptionType::object,
             .help = "the optimizer and its settings",
             .object = "tandem.Optimizer",
             .expected = "an optimizer (T.optim.SGD{lr = 0.1}, T.optim.Adam{...})",
             .required = true},
            {.name = "schedule",
             .type = OptionType::object,
             .help = "the learning rate by step",
             .default_note = "none: the optimizer's lr throughout",
             .object = "tandem.Schedule",
             .expected = "a schedule (T.schedule.Cosine{...}, T.schedule.Step{...}, ...)"},
            {.name = "seed",
             .type = OptionType::integer,
             .help = "draws the initial weights and, with the step, every random number of a step",
             .fallback = 1.0,
             .low = 0,
             .high = kOptionUnbounded},
            {.name = "layout",
             .type = OptionType::choice,
             .help = "the activations' memory layout (channels_last: NHWC, contiguous: NCHW)",
             .default_note = "the first device's kind's fastest",
             .choices = layouts},
            {.name = "precision",
             .type = OptionType::choice,
             .help = "what convolutions and Linear compute in (bf16, fp16: their operands in "
                     "16 bits, float32 sums, weights and other layers; bf16 on CPUs with "
                     "AVX512_BF16 or AMX and on GPUs from compute capability 8.0, fp16 on GPUs "
                     "from 7.0)",
             .fallback = std::string(precision_name(Precision::fp32)),
             .choices = precisions},
            {.name = "loss_scale",
             .type = OptionType::choice,
             .help = "scale the loss so small fp16 gradients do not underflow (dynamic: halved "
                     "on inf or NaN, the step skipped, doubled after loss_scale_window finite "
                     "steps; fixed: initial_loss_scale throughout; auto: dynamic in fp16, else "
                     "none)",
             .fallback = std::string(loss_scale_mode_name(LossScaleMode::automatic)),
             .choices = loss_scales},
            {.name = "initial_loss_scale",
             .type = OptionType::number,
             .help = "the dynamic loss scale's first value, or the fixed one (a power of two "
                     "keeps the scaling exact)",
             .fallback = double(scaling.initial),
             .low = 0,
             .high = double(std::numeric_limits<float>::max()),  // kept as a float
             .above_low = true},
            {.name = "loss_scale_window",
             .type = OptionType::integer,
             .help = "finite steps in a row after which the dynamic loss scale doubles",
             .fallback = double(scaling.window),
             .low = 1,
             .high = kOptionUnbounded},
            {.name = "parallel",
             .type = OptionType::table,
             .help = "how the step spreads over the devices: groups, stages, micro-batches (below)",
             .default_note = "{}",
             .expected = "a table of parallel options ({groups = 2, stages = 2, ...})"},
            {.name = "trace",
             .type = OptionType::flag,
             .help = "record every step's spans, for engine:write_trace",
             .fallback = false},
        }};
}

}  // namespace

const OptionSchema& engine_option_schema() {
    static const OptionSchema schema = make_engine_schema();
    return schema;
}

}  // namespace tandem
