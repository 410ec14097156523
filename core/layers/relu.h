// ReLU: y = max(x, 0), the activation most nets use; an Activation (activation.h) by name.
#pragma once

#include "layers/activation.h"

namespace tandem {

class ReLU final : public Activation {
public:
    ReLU() : Activation(ActivationAlgorithm::relu) {}
};

}  // namespace tandem
