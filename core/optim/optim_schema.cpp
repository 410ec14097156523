#include "optim/optim_schema.h"

#include <limits>

namespace tandem {
namespace {

// The optimizers keep their rates and factors as floats: a larger value would become inf and be
// refused as "inf", not as the value written.
constexpr double kFloatMax = std::numeric_limits<float>::max();

// `fallback` as written (0.01, not the float's 0.0099999997764826): SgdOptions' and AdamOptions'
// floats are these, which tests/core/base/test_option_schema.cpp checks.
OptionSpec float_option(std::string_view name, std::string_view help, double fallback,
                        std::string_view note = {}) {
    return {.name = name,
            .type = OptionType::number,
            .help = help,
            .fallback = fallback,
            .low = 0,
            .high = kFloatMax,
            .note = note};
}

// Every optimizer's: the engine clips the gradients' global norm before the update.
OptionSpec clip_norm_option() {
    return float_option("clip_norm", "scales each step's gradients to at most this global norm", 0,
                        "0: no clipping");
}

OptionSchema make_sgd_schema() {
    OptionSpec momentum = float_option("momentum", "the velocity's decay", 0);
    // 1 or more makes the velocity grow without bound: training diverges.
    momentum.high = 1, momentum.below_high = true;
    OptionSpec dampening =
        float_option("dampening", "the share of each gradient held back from the velocity", 0);
    dampening.high = 1;
    return {
        "optim.sgd",
        "T.optim.SGD",
        {
            float_option("lr", "the learning rate (a schedule's, when the engine has one)", 0.01),
            momentum,
            dampening,
            float_option("weight_decay", "an L2 penalty: weight_decay * w joins the gradient", 0),
            {.name = "nesterov",
             .type = OptionType::flag,
             .help = "Nesterov momentum (needs momentum > 0 and no dampening)",
             .fallback = false},
            clip_norm_option(),
        }};
}

OptionSchema make_adam_schema(std::string_view name, std::string_view function, double decay,
                              std::string_view decay_help) {
    OptionSpec eps = float_option("eps", "added to the second moment's root", 1e-8);
    eps.above_low = true;
    return {
        name,
        function,
        {
            float_option("lr", "the learning rate (a schedule's, when the engine has one)", 0.001),
            {.name = "betas",
             .type = OptionType::pair,
             .help = "the decays of the first and second moments",
             .fallback = std::vector<double>{0.9, 0.999},
             .low = 0,
             .high = 1,
             .below_high = true},
            eps,
            float_option("weight_decay", decay_help, decay),
            clip_norm_option(),
        }};
}

}  // namespace

const OptionSchema& sgd_option_schema() {
    static const OptionSchema schema = make_sgd_schema();
    return schema;
}

const OptionSchema& adam_option_schema() {
    static const OptionSchema schema = make_adam_schema(
        "optim.adam", "T.optim.Adam", 0, "an L2 penalty: weight_decay * w joins the gradient");
    return schema;
}

const OptionSchema& adamw_option_schema() {
    // PyTorch's AdamW default.
    static const OptionSchema schema =
        make_adam_schema("optim.adamw", "T.optim.AdamW", 0.01,
                         "decoupled: the weights shrink by lr * weight_decay apart from the "
                         "gradient");
    return schema;
}

}  // namespace tandem
