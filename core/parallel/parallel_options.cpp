#include "parallel/parallel_options.h"

#include "base/error.h"

namespace tandem {

std::string_view batch_norm_mode_name(BatchNormMode mode) {
    switch (mode) {
        case BatchNormMode::micro: return "micro";
        case BatchNormMode::deferred: return "deferred";
        case BatchNormMode::sync: return "sync";
    }
    return "?";
}

BatchNormMode parse_batch_norm_mode(std::string_view name) {
    if (name == "micro") return BatchNormMode::micro;
    if (name == "deferred") return BatchNormMode::deferred;
    if (name == "sync") return BatchNormMode::sync;
    TANDEM_THROW(ConfigError) << "unknown batch-norm mode '" << name
                              << "' (known: micro, deferred, sync)";
}

std::string_view averaging_algorithm_name(AveragingAlgorithm algorithm) {
    switch (algorithm) {
        case AveragingAlgorithm::plain: return "plain";
        case AveragingAlgorithm::bmuf: return "bmuf";
        case AveragingAlgorithm::easgd: return "easgd";
        case AveragingAlgorithm::momentum: return "momentum";
    }
    return "?";
}

AveragingAlgorithm parse_averaging_algorithm(std::string_view name) {
    if (name == "plain") return AveragingAlgorithm::plain;
    if (name == "bmuf") return AveragingAlgorithm::bmuf;
    if (name == "easgd") return AveragingAlgorithm::easgd;
    if (name == "momentum") return AveragingAlgorithm::momentum;
    TANDEM_THROW(ConfigError) << "parallel.averaging: unknown algorithm '" << name
                              << "' (known: plain, bmuf, easgd, momentum)";
}

}  // namespace tandem
