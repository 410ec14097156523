// A graph net with two branches, for the tests of layer-division model parallelism
// (parallel.placement): flatten -> embed -> g {a1 -> arelu -> a2 ; b1 -> btanh ;
// cat(a2, btanh)} -> head, taking 1 x 8 x 8 samples to 3 classes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/sequential.h"

namespace tandem::test {

std::shared_ptr<Sequential> branch_net();

using Placement = std::vector<std::vector<std::string>>;
// The branches on devices of their own: 4 stages, and 3 (branch b with the stem).
inline const Placement kFourStages{
    {"flatten", "embed"}, {"g.a1", "g.arelu", "g.a2"}, {"g.b1", "g.btanh"}, {"g.cat", "head"}};
inline const Placement kThreeStages{
    {"flatten", "embed", "g.b1", "g.btanh"}, {"g.a1", "g.arelu", "g.a2"}, {"g.cat", "head"}};

}  // namespace tandem::test
