#include "parallel/communicator.h"

#include <string>

#include "base/error.h"

namespace tandem {

std::string_view reduce_algorithm_name(ReduceAlgorithm algorithm) {
    switch (algorithm) {
        case ReduceAlgorithm::ring:
            return "ring";
        case ReduceAlgorithm::tree:
            return "tree";
    }
    return "unknown";
}

ReduceAlgorithm parse_reduce_algorithm(std::string_view name) {
    if (name == "ring") return ReduceAlgorithm::ring;
    if (name == "tree") return ReduceAlgorithm::tree;
    TANDEM_THROW(ConfigError) << "unknown all-reduce algorithm '" << std::string(name)
                              << "' (choices: ring, tree)";
}

}  // namespace tandem
