// layer:forward, layer:backward, layer:gradients, layer:zero_grad: training a layer by hand
// from Lua, as Torch7's modules did (issue 18).
//
// A training forward keeps what backward needs in a Tape (core/layers/pass.h). The engine owns
// one per micro-batch; here each layer object gets one pending training forward, held in this
// Lua state's registry until the matching backward uses it (Torch7's contract: backward(x, dy)
// follows forward(x) on the same x). A later forward replaces it; an eval forward drops it.
#include <string>
#include <unordered_map>
#include <utility>

#include "bind_graph.h"
#include "binding.h"
#include "layer_train.h"
#include "objects.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

constexpr const char* kPendingType = "tandem.PendingForwards";
// Where the store lives in the registry (the type's name there is its metatable's key).
constexpr const char* kPendingKey = "tandem.pending_forwards";

// The training forward a layer's backward will use.
struct PendingForward {
    // The layer itself is not kept alive by a pending forward; the weak pointer tells an entry
    // of a layer that is gone from one of a new layer at the same address.
    std::weak_ptr<Layer> layer;
    Tensor x;  // its input: backward must be given the same tensor
    std::uint64_t seed = 0;
    Tape tape;
};

class PendingForwards {
public:
    void put(const LayerPtr& layer, Tensor x, std::uint64_t seed, Tape tape) {
        prune();
        entries_[layer.get()] = PendingForward{layer, std::move(x), seed, std::move(tape)};
    }
    void drop(const Layer* layer) { entries_.erase(layer); }
    // The pending forward of `layer`, or null.
    PendingForward* find(const LayerPtr& layer) {
        auto it = entries_.find(layer.get());
        if (it == entries_.end() || it->second.layer.lock() != layer) return nullptr;
        return &it->second;
    }
    PendingForward take(const Layer* layer) {
        auto it = entries_.find(layer);
        PendingForward p = std::move(it->second);
        entries_.erase(it);
        return p;
    }

private:
    // Forgets the forwards of layers that were freed (their tapes hold activations).
    void prune() {
        for (auto it = entries_.begin(); it != entries_.end();)
            it = it->second.layer.expired() ? entries_.erase(it) : std::next(it);
    }
    std::unordered_map<const Layer*, PendingForward> entries_;
};

// This Lua state's pending forwards, made on first use and kept in the registry (freed by
// lua_close through the box's __gc).
PendingForwards& pending(lua_State* L) {
    lua_getfield(L, LUA_REGISTRYINDEX, kPendingKey);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        push_box(L, kPendingType, PendingForwards{});
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, kPendingKey);
    }
    auto& store = check_box<PendingForwards>(L, -1, kPendingType, "pending forwards");
    lua_pop(L, 1);  // the registry keeps it alive
    return store;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
    return a.raw() == b.raw() && a.shape() == b.shape() && a.layout() == b.layout() &&
           a.dtype() == b.dtype() && &a.device() == &b.device();
}

int pending_tostring(lua_State* L) {
    lua_pushstring(L, "PendingForwards");
    return 1;
}

const luaL_Reg kNoMethods[] = {{nullptr, nullptr}};

}  // namespace

ForwardOptions check_forward_options(lua_State* L, int index) {
    check_options(L, index, "forward", {"mode", "seed"});
    const std::string mode = option_string(L, index, "mode", "eval");
    if (mode != "train" && mode != "eval")
        throw ArgError(index, "option 'mode' must be 'train' or 'eval', got '" + mode + "'");
    return {mode == "train" ? Mode::train : Mode::eval,
            static_cast<std::uint64_t>(option_int(L, index, "seed", 0))};
}

// layer:forward(x [, {mode = 'eval' | 'train', seed = 0}]): y on x's device. The layer's
// parameters move to that device first. A training forward stays pending for backward.
int layer_forward(lua_State* L) {
    if (lua_istable(L, 2) && is_graph(L, 1)) return graph_forward(L);  // g:forward{x1, x2, ...}
    LayerPtr layer = check_layer(L, 1);
    const Tensor& x = check_tensor(L, 2);
    const ForwardOptions options = check_forward_options(L, 3);
    // Layers compute in f32: an i32 or u8 tensor's bytes would be read as floats (and a u8
    // one past its end).
    if (x.dtype() != DType::f32)
        throw ArgError(2, "layer " + layer->label() + " takes f32 tensors, got " + x.description() +
                              " (T.tensor, T.zeros and T.randn make f32 by default)");

    PendingForwards& store = pending(L);
    store.drop(layer.get());  // whatever happens next, the earlier forward is no longer the last
    Device& device = x.device();
    layer->bind(device, x.shape(), x.layout());
    Tape tape;
    Pass pass{device, options.mode, 0, tape, options.seed};
    push_tensor(L, layer->forward(x, pass));
    if (pass.mode == Mode::train) store.put(layer, x, options.seed, std::move(tape));
    return 1;
}

// layer:backward(x, dy): dx, after layer:forward(x, {mode = 'train'}) on the same x. ADDS the
// parameters' gradients into layer:gradients() (the Layer contract), so several backwards
// accumulate until layer:zero_grad().
int layer_backward(lua_State* L) {
    LayerPtr layer = check_layer(L, 1);
    const Tensor& x = check_tensor(L, 2);
    const Tensor& dy = check_tensor(L, 3);
    PendingForwards& store = pending(L);
    PendingForward* p = store.find(layer);
    if (p == nullptr)
        TANDEM_THROW(Error) << "layer " << layer->label()
                            << ": backward without a pending training forward (call "
                               "layer:forward(x, {mode = 'train'}) first; each one allows one "
                               "backward, and an eval forward ends it)";
    if (!same_tensor(p->x, x))
        throw ArgError(2, "x is not the input of layer " + layer->label() +
                              "'s last training forward (that was " + p->x.description() +
                              ", this is " + x.description() + "): pass the same tensor");
    const Shape expected = layer->output_shape(x.shape());
    if (dy.dtype() != DType::f32 || dy.shape() != expected || &dy.device() != &x.device())
        throw ArgError(3, "dy must be an f32 tensor of the output's shape (" +
                              expected.to_string() + ") on x's device (" + x.device().name() +
                              "), got " + dy.description());
    // Layers take dy in the layout of their output, x's.
    const Tensor grad = dy.to_layout(x.layout());
    // Taken out first: a failing backward leaves no half-used tape behind.
    PendingForward taken = store.take(layer.get());
    Pass pass{x.device(), Mode::train, 0, taken.tape, taken.seed};
    push_tensor(L, layer->backward(x, grad, pass));
    return 1;
}

// layer:gradients(): {["fc1.weight"] = tensor, ...}, sharing the gradients' memory (writing
// into one sets it).
int layer_gradients(lua_State* L) {
    const auto named = named_parameters(*check_layer(L, 1));
    lua_createtable(L, 0, static_cast<int>(named.size()));
    for (const auto& p : named) {
        push_tensor(L, p.parameter->grad);
        lua_setfield(L, -2, p.name.c_str());
    }
    return 1;
}

// layer:zero_grad(): every parameter gradient under the layer set to 0.
int layer_zero_grad(lua_State* L) {
    for (const auto& p : named_parameters(*check_layer(L, 1)))
        if (p.parameter->grad.defined()) p.parameter->grad.fill(0.f);
    return 0;
}

void register_layer_train(lua_State* L, int module) {
    define_type(L, module,
                {kPendingType, wrap<release_box<PendingForwards, kPendingType>>, kNoMethods,
                 wrap<pending_tostring>});
}

}  // namespace tandem::lua
