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
    TANDEM_THROW(ConfigError) << "unknown batch-norm mode '" << name << "' (known: micro, deferred, sync)";
}

}  // namespace tandem
