// RecurrentOptions in one expression, for the tests of LSTM and GRU layers.
#pragma once

#include "layers/recurrent.h"

namespace tandem::test {

inline RecurrentOptions recurrent_options(RnnCellKind cell, std::int64_t input, std::int64_t hidden,
                                          std::int64_t layers, bool bias, bool last_only) {
    RecurrentOptions o;
    o.cell = cell;
    o.input_size = input;
    o.hidden_size = hidden;
    o.layers = layers;
    o.bias = bias;
    o.last_only = last_only;
    return o;
}

}  // namespace tandem::test
