// Checking and pushing the bound C++ objects, one pair per userdata type. Each pair is
// defined in the bind_*.cpp file of its type; the other files use them to take and return
// tensors, devices and layers.
#pragma once

#include <lua.hpp>
#include <memory>

#include "check.h"
#include "data/dataset.h"
#include "device/device.h"
#include "layers/cross_entropy.h"
#include "layers/layer.h"
#include "layers/loss.h"
#include "layers/sequential.h"
#include "tensor/tensor.h"

namespace tandem::lua {

// bind_tensor.cpp. A tensor userdata holds a Tensor (its storage is shared, not copied).
Tensor& check_tensor(lua_State* L, int index);
void push_tensor(lua_State* L, Tensor tensor);

// bind_device.cpp. A device userdata holds a shared_ptr: the device lives while any Lua
// value (or any C++ object, see bind_device.cpp) refers to it.
std::shared_ptr<Device>& check_device(lua_State* L, int index);
void push_device(lua_State* L, std::shared_ptr<Device> device);

// bind_layer.cpp. Every layer kind, Sequential included, is one userdata type.
LayerPtr& check_layer(lua_State* L, int index);
// The layer at `index` as a Sequential; ArgError naming its kind when it is another layer.
Sequential& check_sequential(lua_State* L, int index);
// The same, sharing ownership (what Residual and the engine keep).
std::shared_ptr<Sequential> check_sequential_ptr(lua_State* L, int index);
void push_layer(lua_State* L, LayerPtr layer);

// bind_loss.cpp. The loss is not a Layer (it takes labels and returns sums).
std::shared_ptr<Loss>& check_loss(lua_State* L, int index);

// bind_data.cpp. An in-memory data set (T.data.mnist, T.data.dataset).
std::shared_ptr<InMemoryDataset>& check_dataset(lua_State* L, int index);

}  // namespace tandem::lua
