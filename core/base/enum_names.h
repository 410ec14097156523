// An enum's names declared once, as a table of (value, name) rows: the name of a value, and
// the value of a name, with the error that lists the known ones. An option's words then
// cannot drift between its printing and its parsing.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "base/error.h"

namespace tandem {

template <class E>
struct EnumName {
    E value;
    std::string_view name;
};

// "a, b, c": the names in the table's order, as errors list them.
template <class E, std::size_t N>
std::string enum_choices(const std::array<EnumName<E>, N>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n.name);
    return out;
}

// The name of `value`; "?" for a value outside the table (a cast from a bad integer).
template <class E, std::size_t N>
std::string_view enum_name(const std::array<EnumName<E>, N>& names, E value) {
    for (const auto& n : names)
        if (n.value == value) return n.name;
    return "?";
}

// The value named `text`, else ConfigError "<unknown> '<text>' (known: a, b, c)", where
// `unknown` says what was not known ("unknown pipeline schedule").
template <class E, std::size_t N>
E parse_enum(const std::array<EnumName<E>, N>& names, std::string_view text,
             std::string_view unknown) {
    for (const auto& n : names)
        if (n.name == text) return n.value;
    TANDEM_THROW(ConfigError) << unknown << " '" << text << "' (known: " << enum_choices(names)
                              << ")";
}

}  // namespace tandem
