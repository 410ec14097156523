// What engine.cpp (the steps, placement, checkpoints) and engine_process.cpp (the MPI job)
// share: the replicas. Private to the engine.
#pragma once

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "parallel/stage.h"
#include "parallel/step_plan.h"

namespace tandem {

struct Engine::Replica {
    std::shared_ptr<Sequential> net;
    std::shared_ptr<Loss> loss;  // kernels are cached per object: one per group
    std::unique_ptr<Optimizer> optimizer;
};

}  // namespace tandem
