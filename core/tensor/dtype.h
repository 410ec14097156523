// Element types. Float32 carries all math; int32 holds labels; uint8 holds images and
// opaque kernel workspaces (max-pool indices, dropout masks).
#pragma once

#include <cstddef>
#include <string_view>

namespace tandem {

enum class DType { f32, i32, u8 };

constexpr std::size_t dtype_size(DType t) {
    switch (t) {
        case DType::f32: return 4;
        case DType::i32: return 4;
        case DType::u8: return 1;
    }
    return 0;
}

// Short names as safetensors writes them: "F32", "I32", "U8".
constexpr std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "F32";
        case DType::i32: return "I32";
        case DType::u8: return "U8";
    }
    return "?";
}

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
    return DType::f32;
}
template <>
constexpr DType dtype_of<int>() {
    return DType::i32;
}
template <>
constexpr DType dtype_of<unsigned char>() {
    return DType::u8;
}

}  // namespace tandem
