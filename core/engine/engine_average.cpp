// Model averaging's part of the engine's checkpoints (issue 18): every group's own weights and
// optimizer state, and the averaging algorithm's state (the global model and block momentum of
// BMUF, the centre of EASGD), so that a run resumed from a checkpoint taken between two
// averages goes on exactly as the run that was never stopped.
#include "base/error.h"
#include "engine/engine_internal.h"

namespace tandem {
namespace {

std::string replica_prefix(std::size_t group) {
    return "replica." + std::to_string(group) + ".";
}

// Weights then buffers, as named in the checkpoint.
std::vector<NamedParameter> values_of(Sequential& net) {
    auto values = named_parameters(net);
    auto buffers = named_buffers(net);
    values.insert(values.end(), buffers.begin(), buffers.end());
    return values;
}

}  // namespace

void Engine::save_averaging(std::vector<std::pair<std::string, Tensor>>& tensors) const {
    if (options_.parallel.average_every == 0) return;
    for (std::size_t g = 1; g < replicas_.size(); ++g) {
        const std::string prefix = replica_prefix(g);
        for (auto& v : values_of(*replicas_[g]->net))
            tensors.emplace_back(prefix + "model." + v.name, v.parameter->value);
        for (auto& [name, t] : replicas_[g]->optimizer->state())
            tensors.emplace_back(prefix + "optim." + name, t);
    }
    if (stages_.empty()) {
        for (const auto& [name, t] : pending_average_) tensors.emplace_back("average." + name, t);
        return;
    }
    // Every group holds the same state: group 0's stages speak for all.
    for (int s = 0; s < options_.parallel.stages; ++s)
        if (const ModelAverage* average = stage(0, s).model_average())
            for (auto& [name, t] : average->state()) tensors.emplace_back("average." + name, t);
}

std::function<void()> Engine::load_averaging(const std::map<std::string, Tensor>& by_name,
                                             const std::string& path) {
    const ParallelOptions& p = options_.parallel;
    if (p.average_every == 0) return [] {};
    auto find = [&](const std::string& name, const Tensor& like) -> const Tensor* {
        const auto it = by_name.find(name);
        if (it == by_name.end()) return nullptr;
        TANDEM_CHECK_AS(DataError,
                        it->second.shape() == like.shape() && it->second.dtype() == like.dtype())
            << path << ": '" << name << "' is " << it->second.description() << ", the net expects "
            << like.description();
        return &it->second;
    };
    auto take = [&](const std::string& name, const Tensor& like) -> const Tensor& {
        const Tensor* t = find(name, like);
        TANDEM_CHECK_AS(DataError, t != nullptr) << path << " has no tensor '" << name << "'";
        return *t;
    };

    // Each group's own weights and optimizer state, when the file holds every group's.
    struct Own {
        std::vector<std::pair<Parameter*, Tensor>> values;
        std::vector<std::pair<std::string, Tensor>> optim;
    };
    std::vector<Own> own;
    const auto first = values_of(*options_.net);
    bool every_group = replicas_.size() > 1 && !first.empty();
    for (std::size_t g = 1; g < replicas_.size() && every_group; ++g)
        every_group = by_name.count(replica_prefix(g) + "model." + first.front().name) > 0;
    if (every_group) {
        for (std::size_t g = 1; g < replicas_.size(); ++g) {
            const std::string prefix = replica_prefix(g);
            Own mine;
            for (auto& v : values_of(*replicas_[g]->net))
                mine.values.emplace_back(v.parameter,
                                         take(prefix + "model." + v.name, v.parameter->value));
            const std::string optim = prefix + "optim.";
            for (const auto& [name, t] : by_name)
                if (name.rfind(optim, 0) == 0)
                    mine.optim.emplace_back(name.substr(optim.size()), t);
            try {  // checked on a scratch optimizer: a bad entry changes nothing
                make_optimizer(options_.optimizer)
                    ->load_state(mine.optim, named_parameters(*replicas_[g]->net));
            } catch (Error& e) {
                e.add_context("in group " + std::to_string(g + 1) + "'s optimizer state in " +
                              path);
                throw;
            }
            own.push_back(std::move(mine));
        }
    }

    // The algorithm's state, when the file holds it (saved under the same algorithm).
    std::map<std::string, Tensor> state;
    const auto slots = ModelAverage::state_slots(p.averaging);
    const auto params = named_parameters(*options_.net);
    if (!slots.empty() && !params.empty() &&
        find("average." + slots.front() + "." + params.front().name,
             params.front().parameter->value)) {
        for (const auto& slot : slots)
            for (const auto& np : params)
                state[slot + "." + np.name] =
                    take("average." + slot + "." + np.name, np.parameter->value);
    }

    return [this, own = std::move(own), state = std::move(state)] {
        for (std::size_t g = 1; g <= own.size(); ++g) {
            for (const auto& [parameter, value] : own[g - 1].values)
                parameter->value.copy_from(value);
            replicas_[g]->optimizer->load_state(own[g - 1].optim,
                                                named_parameters(*replicas_[g]->net));
        }
        pending_average_.clear();
        if (stages_.empty()) {
            pending_average_ = state;
            return;
        }
        for (const auto& s : stages_)
            if (ModelAverage* average = s->model_average()) {
                if (state.empty())
                    average->reset();
                else
                    average->load_state(state);
            }
    };
}

}  // namespace tandem
