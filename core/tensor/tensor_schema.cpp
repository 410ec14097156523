#include "tensor/tensor_schema.h"

namespace tandem {

const OptionSchema& tensor_option_schema() {
    static const OptionSchema schema{
        "tensor",
        "T.tensor",
        {
            // Lua's names of DType (dtype.h): tensor:dtype() gives them back.
            {.name = "dtype",
             .type = OptionType::choice,
             .help = "the element type: f32 for math, i32 for labels, u8 for bytes",
             .fallback = std::string("f32"),
             .choices = {"f32", "i32", "u8"}},
        }};
    return schema;
}

}  // namespace tandem
