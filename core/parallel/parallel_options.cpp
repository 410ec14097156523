#include "parallel/parallel_options.h"

#include "base/enum_names.h"

namespace tandem {

namespace {
constexpr std::array<EnumName<BatchNormMode>, 3> kBatchNormModes{
    {{BatchNormMode::micro, "micro"},
     {BatchNormMode::deferred, "deferred"},
     {BatchNormMode::sync, "sync"}}};
constexpr std::array<EnumName<AveragingAlgorithm>, 4> kAveragingAlgorithms{
    {{AveragingAlgorithm::plain, "plain"},
     {AveragingAlgorithm::bmuf, "bmuf"},
     {AveragingAlgorithm::easgd, "easgd"},
     {AveragingAlgorithm::momentum, "momentum"}}};
}  // namespace

std::string_view batch_norm_mode_name(BatchNormMode mode) {
    return enum_name(kBatchNormModes, mode);
}

BatchNormMode parse_batch_norm_mode(std::string_view name) {
    return parse_enum(kBatchNormModes, name, "unknown batch-norm mode");
}

std::string_view averaging_algorithm_name(AveragingAlgorithm algorithm) {
    return enum_name(kAveragingAlgorithms, algorithm);
}

AveragingAlgorithm parse_averaging_algorithm(std::string_view name) {
    return parse_enum(kAveragingAlgorithms, name, "parallel.averaging: unknown algorithm");
}

}  // namespace tandem
