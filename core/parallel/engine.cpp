#include "parallel/engine.h"

#include "base/rng.h"
#include "io/safetensors.h"

namespace tandem {
namespace {

constexpr const char* kFormat = "tandem-checkpoint-1";

void check_batch(const Tensor& images, const Tensor& labels) {
    TANDEM_CHECK_AS(ShapeError, images.defined() && labels.defined())
        << "a batch needs images and labels";
    TANDEM_CHECK_AS(ShapeError, images.shape().rank() >= 2 && images.dtype() == DType::f32)
        << "images must be f32 with a batch dimension, got " << images.description();
    TANDEM_CHECK_AS(ShapeError, labels.shape().rank() == 1 && labels.dtype() == DType::i32 &&
                                    labels.shape()[0] == images.shape()[0])
        << "labels must be i32 with one per image: images " << images.description()
        << ", labels " << labels.description();
}

}  // namespace

Engine::Engine(EngineOptions options) : options_(std::move(options)), sgd_(options_.sgd) {
    TANDEM_CHECK_AS(ConfigError, options_.net != nullptr) << "Engine: no net given";
    TANDEM_CHECK_AS(ConfigError, options_.net->size() > 0) << "Engine: the net has no layers";
    if (!options_.loss) options_.loss = std::make_shared<CrossEntropy>();
    TANDEM_CHECK_AS(ConfigError, options_.devices.size() == 1)
        << "Engine: this engine trains on one device; given " << options_.devices.size();
    options_.net->initialize(options_.seed);
    options_.net->to(device());
}

Engine::~Engine() = default;

float Engine::current_lr() const {
    return options_.schedule ? options_.schedule->lr(step_) : options_.sgd.lr;
}

Tensor Engine::to_device_input(const Tensor& images) const {
    Device& dev = *options_.devices.front();
    Tensor x = &images.device() == &dev ? images : images.to(dev);
    if (x.shape().rank() == 4 && x.layout() != options_.layout) x = x.to_layout(options_.layout);
    return x;
}

StepResult Engine::step(const Tensor& images, const Tensor& labels) {
    check_batch(images, labels);
    StepResult result;
    result.lr = current_lr();
    Device& dev = device();
    dev.worker().run([&] {
        const Tensor x = to_device_input(images);
        const Tensor y = &labels.device() == &dev ? labels : labels.to(dev);
        const auto params = named_parameters(*options_.net);
        Sgd::zero_grad(params);

        Tape tape;
        Pass pass{dev, Mode::train, 0, tape, rng_key(options_.seed, static_cast<std::uint64_t>(step_))};
        const Tensor logits = options_.net->forward(x, pass);
        const LossSums sums = options_.loss->forward(logits, y, pass);
        const float scale = 1.0f / static_cast<float>(sums.count);
        const Tensor dlogits = options_.loss->backward(logits, y, scale, pass);
        pass.need_dx = false;  // nobody reads the gradient of the images
        options_.net->backward(x, dlogits, pass);
        sgd_.step(params, result.lr);

        result.samples = sums.count;
        result.loss = sums.loss / static_cast<double>(sums.count);
        result.accuracy = static_cast<double>(sums.correct) / static_cast<double>(sums.count);
    });
    ++step_;
    return result;
}

LossSums Engine::evaluate_batch(const Tensor& images, const Tensor& labels) {
    check_batch(images, labels);
    LossSums sums;
    Device& dev = device();
    dev.worker().run([&] {
        const Tensor x = to_device_input(images);
        const Tensor y = &labels.device() == &dev ? labels : labels.to(dev);
        Tape tape;
        Pass pass{dev, Mode::eval, 0, tape, 0};
        sums = options_.loss->forward(options_.net->forward(x, pass), y, pass);
    });
    return sums;
}

void Engine::save(const std::string& path, const std::map<std::string, std::string>& metadata) {
    NamedTensors tensors;
    for (auto& p : named_parameters(*options_.net)) tensors.emplace_back("model." + p.name, p.parameter->value);
    for (auto& b : named_buffers(*options_.net)) tensors.emplace_back("model." + b.name, b.parameter->value);
    for (auto& [name, t] : sgd_.state()) tensors.emplace_back("optim." + name, t);
    std::map<std::string, std::string> meta = metadata;
    meta["format"] = kFormat;
    meta["step"] = std::to_string(step_);
    meta["seed"] = std::to_string(options_.seed);
    save_safetensors(path, tensors, meta);
}

std::map<std::string, std::string> Engine::load(const std::string& path) {
    // Read everything first: a bad file must leave the engine as it was.
    SafetensorsContents file = load_safetensors(path, device());
    auto& meta = file.metadata;
    TANDEM_CHECK_AS(DataError, meta.count("format") && meta["format"] == kFormat)
        << path << " is not a Tandem checkpoint (metadata 'format' is not " << kFormat << ")";
    std::map<std::string, Tensor> by_name;
    for (auto& [name, t] : file.tensors) by_name[name] = t;

    auto take = [&](const std::string& name, const Tensor& like) -> Tensor {
        auto it = by_name.find(name);
        TANDEM_CHECK_AS(DataError, it != by_name.end())
            << path << " has no tensor '" << name << "' (the net has a layer the checkpoint lacks)";
        TANDEM_CHECK_AS(DataError, it->second.shape() == like.shape())
            << path << ": '" << name << "' is " << it->second.shape().to_string()
            << ", the net expects " << like.shape().to_string();
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
    std::int64_t step = 0;
    try {
        step = std::stoll(meta.at("step"));
    } catch (const std::exception&) {
        TANDEM_THROW(DataError) << path << ": metadata 'step' is missing or not a number";
    }
    sgd_.load_state(optim_state, named_parameters(*options_.net));

    for (auto& [parameter, value] : updates) parameter->value.copy_from(value);
    step_ = step;
    if (meta.count("seed")) options_.seed = std::stoull(meta["seed"]);
    return meta;
}

}  // namespace tandem
