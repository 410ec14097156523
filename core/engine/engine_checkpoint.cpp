// The engine's checkpoints: weights and buffers by layer name, the optimizer's state, the step,
// seed and loss scale (engine.h says what a file holds and how a load checks it).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "io/safetensors.h"

namespace tandem {
namespace {

constexpr const char* kCheckpointFormat = "tandem-checkpoint-1";
// Loss scaling's state (with loss scaling only).
constexpr const char* kLossScaleKey = "loss_scale";
constexpr const char* kGoodStepsKey = "loss_scale_good_steps";
constexpr const char* kSkippedKey = "loss_scale_skipped";

}  // namespace

void Engine::save(const std::string& path, const std::map<std::string, std::string>& metadata) {
    if (process_ != 0) return;  // under MPI rank 0 writes for every process
    NamedTensors tensors;
    for (auto& p : named_parameters(*options_.net))
        tensors.emplace_back("model." + p.name, p.parameter->value);
    for (auto& b : named_buffers(*options_.net))
        tensors.emplace_back("model." + b.name, b.parameter->value);
    // Under synchronous SGD the replicas are identical after every step: group 0's copy speaks
    // for all (model averaging adds the others', save_averaging).
    for (auto& [name, t] : replicas_.front()->optimizer->state())
        tensors.emplace_back("optim." + name, t);
    save_averaging(tensors);
    std::map<std::string, std::string> meta = metadata;
    meta["format"] = kCheckpointFormat;
    meta["step"] = std::to_string(step_);
    meta["seed"] = std::to_string(options_.seed);
    if (scaler_.enabled()) {
        const LossScaler::State state = scaler_.state();
        char scale[32];
        std::snprintf(scale, sizeof scale, "%.9g", double(state.scale));  // round-trips a float
        meta[kLossScaleKey] = scale;
        meta[kGoodStepsKey] = std::to_string(state.good_steps);
        meta[kSkippedKey] = std::to_string(state.skipped);
    }
    save_safetensors(path, tensors, meta);
}

std::map<std::string, std::string> Engine::load(const std::string& path) {
    // Read everything first: a bad file must leave the engine as it was.
    SafetensorsContents file = load_safetensors(path, host_device());
    auto& meta = file.metadata;
    TANDEM_CHECK_AS(DataError, meta.count("format") && meta["format"] == kCheckpointFormat)
        << path << " is not a Tandem checkpoint (metadata 'format' is not " << kCheckpointFormat
        << ")";
    std::map<std::string, Tensor> by_name;
    for (auto& [name, t] : file.tensors) by_name[name] = t;

    auto take = [&](const std::string& name, const Tensor& like) -> Tensor {
        auto it = by_name.find(name);
        TANDEM_CHECK_AS(DataError, it != by_name.end())
            << path << " has no tensor '" << name << "' (the net has a layer the checkpoint lacks)";
        TANDEM_CHECK_AS(DataError, it->second.shape() == like.shape())
            << path << ": '" << name << "' is " << it->second.shape().to_string()
            << ", the net expects " << like.shape().to_string();
        TANDEM_CHECK_AS(DataError, it->second.dtype() == like.dtype())
            << path << ": '" << name << "' holds " << dtype_name(it->second.dtype())
            << " values, the net's are " << dtype_name(like.dtype());
        return it->second;
    };
    std::vector<std::pair<Parameter*, Tensor>> updates;
    for (auto& p : named_parameters(*options_.net))
        updates.emplace_back(p.parameter, take("model." + p.name, p.parameter->value));
    for (auto& b : named_buffers(*options_.net))
        updates.emplace_back(b.parameter, take("model." + b.name, b.parameter->value));
    std::vector<std::pair<std::string, Tensor>> optim_state;
    for (auto& [name, t] : file.tensors)
        if (name.rfind("optim.", 0) == 0) optim_state.emplace_back(name.substr(6), t);
    // Step and seed are whole numbers >= 0, written by save(): anything else ("-5", "1.5", "7x")
    // is a damaged or hand-made file, refused before anything changes (issue 19).
    auto count = [&](const char* key) -> std::uint64_t {
        const auto it = meta.find(key);
        TANDEM_CHECK_AS(DataError, it != meta.end())
            << path << ": metadata '" << key << "' is missing";
        const std::string& text = it->second;
        const bool digits = !text.empty() && text.size() <= 19 &&
                            text.find_first_not_of("0123456789") == std::string::npos;
        TANDEM_CHECK_AS(DataError, digits) << path << ": metadata '" << key
                                           << "' must be a whole number >= 0, got '" << text << "'";
        return std::stoull(text);
    };
    const auto step = static_cast<std::int64_t>(count("step"));
    const std::uint64_t seed = meta.count("seed") ? count("seed") : options_.seed;
    // Loss scaling's state where the file has it; a file written without loss scaling starts
    // the scale afresh.
    LossScaler scaler = scaler_;
    if (!scaler.enabled() || !meta.count(kLossScaleKey)) {
        scaler.restart();
    } else {
        const std::string& text = meta[kLossScaleKey];
        char* end = nullptr;
        const float scale = std::strtof(text.c_str(), &end);
        TANDEM_CHECK_AS(DataError,
                        end != text.c_str() && *end == '\0' && std::isfinite(scale) && scale > 0)
            << path << ": metadata '" << kLossScaleKey << "' must be a finite number > 0, got '"
            << text << "'";
        scaler.restore({scale, static_cast<std::int64_t>(count(kGoodStepsKey)),
                        static_cast<std::int64_t>(count(kSkippedKey))});
    }
    const std::function<void()> apply_averaging = load_averaging(by_name, path);
    try {
        for (auto& replica : replicas_)
            replica->optimizer->load_state(optim_state, named_parameters(*replica->net));
    } catch (Error& e) {
        e.add_context("in the optimizer state of " + path);
        throw;
    }

    for (auto& [parameter, value] : updates) parameter->value.copy_from(value);
    // The other replicas take the same values, by position (their names are the same).
    for (std::size_t g = 1; g < replicas_.size(); ++g) {
        auto params = named_parameters(*replicas_[g]->net),
             buffers = named_buffers(*replicas_[g]->net);
        params.insert(params.end(), buffers.begin(), buffers.end());
        for (std::size_t i = 0; i < params.size(); ++i)
            params[i].parameter->value.copy_from(updates[i].second);
    }
    apply_averaging();
    step_ = step;
    options_.seed = seed;
    scaler_ = scaler;
    return meta;
}

}  // namespace tandem
