// libFuzzer: arbitrary bytes as a file of users' interaction data (docs/data-format.md,
// "Interaction data"), parsed and laid out as `T.data.interactions` and `tandem
// import-interactions` do, with the shape taken from the data and with a given one. A damaged
// line may be refused with a DataError (or a ConfigError for a file of nothing to read); it may
// not crash, hang, read out of bounds or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "base/error.h"
#include "data/interactions.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem;
    try {
        std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
        const auto lines = parse_interaction_text(in, "fuzz.tsv");
        for (const InteractionShape shape : {InteractionShape{}, InteractionShape{4, 8}}) {
            try {
                (void)layout_interactions(lines, "fuzz.tsv", shape);
            } catch (const DataError&) {
            } catch (const ConfigError&) {
            }
        }
    } catch (const DataError&) {
    }
    return 0;
}
