// tandem.Loss: the losses that end a net (T.nn.CrossEntropy, T.nn.MSE, T.nn.BCEWithLogits).
//   loss:forward(output, targets [, {mode =}]) -> {loss =, correct =, count =}   (sums)
//   loss:backward(output, targets [, scale]) -> d(scale * summed loss) / d output
#include "binding.h"
#include "layers/element_loss.h"
#include "objects.h"
#include "wrap.h"

namespace tandem::lua {

std::shared_ptr<Loss>& check_loss(lua_State* L, int index) {
    return check_box<std::shared_ptr<Loss>>(L, index, kLossType, "loss");
}

namespace {

// core.nn_cross_entropy(label_smoothing)
int nn_cross_entropy(lua_State* L) {
    const auto smoothing = static_cast<float>(opt_number(L, 1, 0.0));
    push_box(L, kLossType, std::shared_ptr<Loss>(std::make_shared<CrossEntropy>(smoothing)));
    return 1;
}

// core.nn_element_loss('mse' | 'bce_with_logits')
int nn_element_loss(lua_State* L) {
    const std::string kind = check_string(L, 1);
    if (kind != "mse" && kind != "bce_with_logits")
        throw ArgError(1, "unknown element loss '" + kind + "'");
    push_box(L, kLossType,
             std::shared_ptr<Loss>(std::make_shared<ElementLoss>(
                 kind == "mse" ? ElementLossKind::mse : ElementLossKind::bce_with_logits)));
    return 1;
}

Pass pass_on(const Tensor& output, Mode mode, Tape& tape) {
    return Pass{output.device(), mode, 0, tape, 0};
}

// loss:forward(output, targets [, {mode = 'eval' | 'train'}]): {loss, correct, count}, the loss
// summed over the samples; correct only for losses with an accuracy.
int loss_forward(lua_State* L) {
    auto loss = check_loss(L, 1);
    const Tensor& output = check_tensor(L, 2);
    const Tensor& targets = check_tensor(L, 3);
    check_options(L, 4, "forward", {"mode"});
    const std::string mode = option_string(L, 4, "mode", "eval");
    if (mode != "train" && mode != "eval")
        throw ArgError(4, "option 'mode' must be 'train' or 'eval', got '" + mode + "'");
    Tape tape;
    Pass pass = pass_on(output, mode == "train" ? Mode::train : Mode::eval, tape);
    const LossSums sums = loss->forward(output, targets, pass);
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, sums.loss);
    lua_setfield(L, -2, "loss");
    if (loss->has_accuracy()) {
        lua_pushnumber(L, static_cast<lua_Number>(sums.correct));
        lua_setfield(L, -2, "correct");
    }
    lua_pushnumber(L, static_cast<lua_Number>(sums.count));
    lua_setfield(L, -2, "count");
    return 1;
}

// loss:backward(output, targets [, scale = 1]): the gradient of scale * (summed loss) with
// respect to the output (scale = 1 / N gives the mean's).
int loss_backward(lua_State* L) {
    auto loss = check_loss(L, 1);
    const Tensor& output = check_tensor(L, 2);
    const Tensor& targets = check_tensor(L, 3);
    const auto scale = static_cast<float>(opt_number(L, 4, 1.0));
    Tape tape;
    Pass pass = pass_on(output, Mode::eval, tape);
    push_tensor(L, loss->backward(output, targets, scale, pass));
    return 1;
}

int loss_label_smoothing(lua_State* L) {
    const auto* ce = dynamic_cast<const CrossEntropy*>(check_loss(L, 1).get());
    if (ce == nullptr)
        throw ArgError(1, "label_smoothing belongs to CrossEntropy, not " +
                              std::string(check_loss(L, 1)->kind()));
    lua_pushnumber(L, ce->label_smoothing());
    return 1;
}

int loss_kind(lua_State* L) {
    lua_pushstring(L, std::string(check_loss(L, 1)->kind()).c_str());
    return 1;
}

int loss_tostring(lua_State* L) {
    using Ptr = std::shared_ptr<Loss>;
    auto* box = static_cast<Box<Ptr>*>(luaL_testudata(L, 1, kLossType));
    if (box == nullptr) throw ArgError(1, "tandem.Loss expected, got " + type_name(L, 1));
    lua_pushstring(L, box->value ? (*box->value)->description().c_str() : "Loss(freed)");
    return 1;
}

const luaL_Reg kLossMethods[] = {
    {"forward", wrap<loss_forward>},
    {"backward", wrap<loss_backward>},
    {"label_smoothing", wrap<loss_label_smoothing>},
    {"kind", wrap<loss_kind>},
    {nullptr, nullptr},
};

const luaL_Reg kLossFunctions[] = {
    {"nn_cross_entropy", wrap<nn_cross_entropy>},
    {"nn_element_loss", wrap<nn_element_loss>},
    {nullptr, nullptr},
};

}  // namespace

void register_loss(lua_State* L, int module) {
    using Ptr = std::shared_ptr<Loss>;
    define_type(L, module,
                {kLossType, wrap<release_box<Ptr, kLossType>>, kLossMethods, wrap<loss_tostring>});
    add_functions(L, module, kLossFunctions);
}

}  // namespace tandem::lua
