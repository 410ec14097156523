// Transfer: the layer at a cut between two stages. Forward, the receiving stage's worker copies
// the activation into its own device's memory; backward, the gradient comes back the same way.
// The sender never waits for the copy (it posts the tensor on the StepBoard and goes on), and
// no kernel reads another device's memory: after a transfer the tensor is the receiver's.
#pragma once

#include "tensor/tensor.h"

namespace tandem {

// `x` in `to`'s memory (x itself when it is there already), in the same layout.
Tensor transfer(const Tensor& x, Device& to);

}  // namespace tandem
