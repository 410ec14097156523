#include "parallel/averaging.h"

#include "base/error.h"
#include "device/device.h"
#include "kernels/kernel_cache.h"

namespace tandem {
namespace {

std::vector<std::pair<std::string, Tensor>> values_of(const std::vector<NamedParameter>& named) {
    std::vector<std::pair<std::string, Tensor>> values;
    for (const auto& np : named) values.emplace_back(np.name, np.parameter->value);
    return values;
}

}  // namespace

ModelAverage::ModelAverage(AveragingParts parts) : parts_(std::move(parts)) {
    TANDEM_CHECK(parts_.parallel && parts_.communicator && parts_.device)
        << "model averaging needs its stage's parts";
    const std::size_t bucket_bytes = parts_.parallel->bucket_bytes;
    // momentum lists its tensors at each average (the optimizer's slots come and go).
    auto values = values_of(parts_.buffers);
    if (algorithm() != AveragingAlgorithm::easgd) {
        auto weights = values_of(parts_.parameters);
        values.insert(values.begin(), weights.begin(), weights.end());
    }
    if (algorithm() != AveragingAlgorithm::momentum)
        means_ = std::make_unique<GradientBuckets>(std::move(values), bucket_bytes);
    if (algorithm() == AveragingAlgorithm::easgd) {
        std::vector<std::pair<std::string, Tensor>> differences;
        for (std::size_t i = 0; i < parts_.parameters.size(); ++i) {
            difference_.push_back(like(i));
            differences.emplace_back(parts_.parameters[i].name, difference_.back());
        }
        differences_ = std::make_unique<GradientBuckets>(std::move(differences), bucket_bytes);
    }
}

std::vector<std::string> ModelAverage::state_slots(AveragingAlgorithm algorithm) {
    if (algorithm == AveragingAlgorithm::bmuf) return {"global", "block_momentum"};
    if (algorithm == AveragingAlgorithm::easgd) return {"center"};
    return {};
}

double ModelAverage::effective_block_momentum(const ParallelOptions& parallel, int replicas) {
    return parallel.block_momentum > 0 ? parallel.block_momentum : 1.0 - 1.0 / replicas;
}

double ModelAverage::effective_elastic_alpha(const ParallelOptions& parallel, int replicas) {
    return parallel.elastic_alpha > 0 ? parallel.elastic_alpha : 0.9 / replicas;
}

Tensor ModelAverage::like(std::size_t i) const {
    const Tensor& value = parts_.parameters[i].parameter->value;
    return Tensor::empty(value.shape(), value.device(), DType::f32, value.layout());
}

void ModelAverage::start() {
    if (started()) return;
    auto& ops = tensor_ops(*parts_.device);
    std::vector<Tensor>& model = algorithm() == AveragingAlgorithm::bmuf ? global_ : center_;
    model.clear(), move_.clear();
    for (std::size_t i = 0; i < parts_.parameters.size(); ++i) {
        model.push_back(like(i));
        ops.copy(parts_.parameters[i].parameter->value, model.back());
        if (algorithm() == AveragingAlgorithm::bmuf) {
            move_.push_back(like(i));
            ops.fill(move_.back(), 0.f);
        }
    }
    started_ = true;
}

std::vector<std::pair<std::string, Tensor>> ModelAverage::state() const {
    std::vector<std::pair<std::string, Tensor>> out;
    if (!started_) return out;
    for (std::size_t i = 0; i < parts_.parameters.size(); ++i) {
        const std::string& name = parts_.parameters[i].name;
        if (algorithm() == AveragingAlgorithm::bmuf) {
            out.emplace_back("global." + name, global_[i]);
            out.emplace_back("block_momentum." + name, move_[i]);
        } else if (algorithm() == AveragingAlgorithm::easgd) {
            out.emplace_back("center." + name, center_[i]);
        }
    }
    return out;
}

void ModelAverage::load_state(const std::map<std::string, Tensor>& entries) {
    const auto slots = state_slots(algorithm());
    if (slots.empty()) return;
    std::vector<std::vector<Tensor>> loaded(slots.size());
    for (std::size_t k = 0; k < slots.size(); ++k)
        for (std::size_t i = 0; i < parts_.parameters.size(); ++i) {
            const std::string key = slots[k] + "." + parts_.parameters[i].name;
            const auto it = entries.find(key);
            TANDEM_CHECK_AS(DataError, it != entries.end())
                << "model averaging's state has no '" << key << "'";
            Tensor t = like(i);
            t.copy_from(it->second);
            loaded[k].push_back(std::move(t));
        }
    if (algorithm() == AveragingAlgorithm::bmuf) {
        global_ = std::move(loaded[0]), move_ = std::move(loaded[1]);
    } else {
        center_ = std::move(loaded[0]);
    }
    started_ = true;
}

void ModelAverage::average() {
    TANDEM_CHECK(started()) << "model averaging: average() before start()";
    const float mean = 1.0f / static_cast<float>(parts_.replicas);
    switch (algorithm()) {
        case AveragingAlgorithm::plain:
            means_->all_reduce_all(*parts_.communicator, parts_.rank, ReduceAlgorithm::tree, mean);
            break;
        case AveragingAlgorithm::bmuf:
            means_->all_reduce_all(*parts_.communicator, parts_.rank, ReduceAlgorithm::tree, mean);
            average_bmuf();
            break;
        case AveragingAlgorithm::easgd: average_easgd(); break;
        case AveragingAlgorithm::momentum: average_momentum(); break;
    }
}

void ModelAverage::average_bmuf() {
    // The replica holds A, the mean, now; it serves as G's scratch before it takes the new start.
    auto& ops = tensor_ops(*parts_.device);
    const bool nesterov = parts_.parallel->block_nesterov;
    const auto eta =
        static_cast<float>(effective_block_momentum(*parts_.parallel, parts_.replicas));
    const auto zeta = static_cast<float>(parts_.parallel->block_lr);
    for (std::size_t i = 0; i < parts_.parameters.size(); ++i) {
        Tensor& w = parts_.parameters[i].parameter->value;
        ops.blend(w, 1.f, global_[i], -1.f);              // A - W
        if (nesterov) ops.blend(w, 1.f, move_[i], -eta);  // G = A - (W + eta D), the block's start
        ops.blend(move_[i], eta, w, zeta);                // D = eta D + zeta G
        ops.accumulate(global_[i], move_[i]);             // W += D
        ops.copy(global_[i], w);
        if (nesterov) ops.blend(w, 1.f, move_[i], eta);  // the next block starts at W + eta D
    }
}

void ModelAverage::average_easgd() {
    auto& ops = tensor_ops(*parts_.device);
    const auto alpha =
        static_cast<float>(effective_elastic_alpha(*parts_.parallel, parts_.replicas));
    for (std::size_t i = 0; i < parts_.parameters.size(); ++i) {
        Tensor& w = parts_.parameters[i].parameter->value;
        ops.copy(w, difference_[i]);
        ops.blend(difference_[i], 1.f, center_[i], -1.f);  // d_i = w_i - c
        ops.blend(w, 1.f, difference_[i], -alpha);         // w_i -= alpha d_i
    }
    differences_->all_reduce_all(*parts_.communicator, parts_.rank,
                                 ReduceAlgorithm::tree);  // sum_i d_i
    for (std::size_t i = 0; i < parts_.parameters.size(); ++i)
        ops.blend(center_[i], 1.f, difference_[i], alpha);
    means_->all_reduce_all(*parts_.communicator, parts_.rank, ReduceAlgorithm::tree,
                           1.0f / static_cast<float>(parts_.replicas));
}

void ModelAverage::average_momentum() {
    // The optimizer's slots of this stage's parameters, in the state's (sorted) order: the same
    // list in every replica. They are listed again each time: a checkpoint's load replaces them.
    // Slots on the host are step counts, equal in every replica.
    std::map<std::string, bool> mine;
    for (const auto& np : parts_.parameters) mine[np.name] = true;
    auto values = values_of(parts_.parameters);
    auto buffers = values_of(parts_.buffers);
    values.insert(values.end(), buffers.begin(), buffers.end());
    if (parts_.optimizer) {
        for (auto& [key, t] : parts_.optimizer->state()) {
            const auto dot = key.find('.');
            if (dot == std::string::npos || !mine.count(key.substr(dot + 1))) continue;
            if (&t.device() != parts_.device) continue;
            values.emplace_back(key, t);
        }
    }
    GradientBuckets all(std::move(values), parts_.parallel->bucket_bytes);
    all.all_reduce_all(*parts_.communicator, parts_.rank, ReduceAlgorithm::tree,
                       1.0f / static_cast<float>(parts_.replicas));
}

}  // namespace tandem
