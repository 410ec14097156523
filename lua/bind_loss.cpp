// tandem.CrossEntropy: the softmax cross-entropy loss (core.nn_cross_entropy, T.nn.CrossEntropy).
#include <cstdio>

#include "binding.h"
#include "objects.h"
#include "wrap.h"

namespace tandem::lua {

std::shared_ptr<CrossEntropy>& check_loss(lua_State* L, int index) {
    return check_box<std::shared_ptr<CrossEntropy>>(L, index, kLossType, "loss");
}

namespace {

// core.nn_cross_entropy(label_smoothing)
int nn_cross_entropy(lua_State* L) {
    const auto smoothing = static_cast<float>(opt_number(L, 1, 0.0));
    push_box(L, kLossType, std::make_shared<CrossEntropy>(smoothing));
    return 1;
}

// loss:forward(logits, labels [, {mode = 'eval' | 'train'}]): {loss, correct, count}, where
// loss is summed over the samples. logits: N x K f32; labels: N i32 class indices from 0.
int loss_forward(lua_State* L) {
    auto loss = check_loss(L, 1);
    const Tensor& logits = check_tensor(L, 2);
    const Tensor& labels = check_tensor(L, 3);
    check_options(L, 4, "forward", {"mode"});
    const std::string mode = option_string(L, 4, "mode", "eval");
    if (mode != "train" && mode != "eval")
        throw ArgError(4, "option 'mode' must be 'train' or 'eval', got '" + mode + "'");
    Tape tape;
    Pass pass{logits.device(), mode == "train" ? Mode::train : Mode::eval, 0, tape, 0};
    const LossSums sums = loss->forward(logits, labels, pass);
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, sums.loss);
    lua_setfield(L, -2, "loss");
    lua_pushnumber(L, static_cast<lua_Number>(sums.correct));
    lua_setfield(L, -2, "correct");
    lua_pushnumber(L, static_cast<lua_Number>(sums.count));
    lua_setfield(L, -2, "count");
    return 1;
}

int loss_label_smoothing(lua_State* L) {
    lua_pushnumber(L, check_loss(L, 1)->label_smoothing());
    return 1;
}

int loss_tostring(lua_State* L) {
    using Ptr = std::shared_ptr<CrossEntropy>;
    auto* box = static_cast<Box<Ptr>*>(luaL_testudata(L, 1, kLossType));
    if (box == nullptr) throw ArgError(1, "tandem.CrossEntropy expected, got " + type_name(L, 1));
    char text[64] = "CrossEntropy(freed)";
    if (box->value)
        std::snprintf(text, sizeof text, "CrossEntropy(label_smoothing = %g)",
                      static_cast<double>((*box->value)->label_smoothing()));
    lua_pushstring(L, text);
    return 1;
}

const luaL_Reg kMethods[] = {
    {"forward", wrap<loss_forward>},
    {"label_smoothing", wrap<loss_label_smoothing>},
    {nullptr, nullptr},
};

const luaL_Reg kFunctions[] = {
    {"nn_cross_entropy", wrap<nn_cross_entropy>},
    {nullptr, nullptr},
};

}  // namespace

void register_loss(lua_State* L, int module) {
    using Ptr = std::shared_ptr<CrossEntropy>;
    define_type(L, module,
                {kLossType, wrap<release_box<Ptr, kLossType>>, kMethods, wrap<loss_tostring>});
    add_functions(L, module, kFunctions);
}

}  // namespace tandem::lua
