#include "support/branch_net.h"

#include "layers/activation.h"
#include "layers/concat.h"
#include "layers/flatten.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/relu.h"

namespace tandem::test {
namespace {

LayerPtr named(LayerPtr layer, const std::string& name) {
    layer->set_name(name);
    return layer;
}

LayerPtr dense(std::int64_t in, std::int64_t out, const std::string& name) {
    return named(std::make_shared<Linear>(LinearOptions{in, out, true, "kaiming"}), name);
}

}  // namespace

std::shared_ptr<Sequential> branch_net() {
    auto g = std::make_shared<Graph>();
    g->set_name("g");
    g->add_input("x");
    g->add(dense(16, 12, "a1"), {"x"});
    g->add(named(std::make_shared<ReLU>(), "arelu"), {"a1"});
    g->add(dense(12, 8, "a2"), {"arelu"});
    g->add(dense(16, 8, "b1"), {"x"});
    g->add(named(std::make_shared<Activation>(ActivationAlgorithm::tanh), "btanh"), {"b1"});
    g->add(named(std::make_shared<Concat>(1), "cat"), {"a2", "btanh"});
    g->set_outputs({"cat"});
    return std::make_shared<Sequential>(
        std::vector<LayerPtr>{named(std::make_shared<Flatten>(), "flatten"), dense(64, 16, "embed"),
                              g, dense(16, 3, "head")});
}

}  // namespace tandem::test
