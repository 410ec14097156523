#include "base/option_schema.h"

#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace tandem {
namespace {

// A bound as the messages write it: "16777216", "0.5".
std::string bound_text(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.14g", x);
    return text;
}

// The range in words, of one value ("an integer in [1, 256]") or, `plural`, of each of a list's
// ("integers in [1, 256]").
// A top bound at a 32-bit integer's or a float's limit is where the value is stored, not what the
// option means: the words leave it out ("a positive integer", "a finite number >= 0"), as a
// reader would expect; a value past it is still refused.
constexpr double kStorageIntegerLimit = 2147483647.0;
constexpr double kStorageFloatLimit = 3.4028234663852886e38;

std::string range_words(const OptionSpec& o, bool plural = false) {
    const bool whole = o.type != OptionType::number && o.type != OptionType::pair;
    if (whole) {
        const std::string integer = plural ? "integers" : "an integer";
        if (o.high < kStorageIntegerLimit)
            return integer + " in [" + bound_text(o.low) + ", " + bound_text(o.high) + "]";
        const std::string a = plural ? "" : "a ";
        if (o.low == 0) return a + "non-negative " + (plural ? "integers" : "integer");
        if (o.low == 1) return a + "positive " + (plural ? "integers" : "integer");
        return integer + " >= " + bound_text(o.low);
    }
    const std::string number = plural ? "finite numbers" : "a finite number";
    const bool no_low = o.low == -HUGE_VAL, no_high = o.high >= kStorageFloatLimit;
    if (no_low && no_high) return number;
    if (no_low) return number + (o.below_high ? " < " : " <= ") + bound_text(o.high);
    if (no_high) return number + (o.above_low ? " > " : " >= ") + bound_text(o.low);
    return number + " in " + (o.above_low ? "(" : "[") + bound_text(o.low) + ", " +
           bound_text(o.high) + (o.below_high ? ")" : "]");
}

// "'a'", "'a' or 'b'", "'a', 'b' or 'c'".
std::string choice_words(const std::vector<std::string_view>& choices) {
    std::string words;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (i > 0) words += i + 1 == choices.size() ? " or " : ", ";
        words.append(1, '\'').append(choices[i]).append(1, '\'');
    }
    return words;
}

std::string type_words(const OptionSpec& o) {
    switch (o.type) {
        case OptionType::integer:
        case OptionType::number: return range_words(o);
        case OptionType::flag: return "true or false";
        case OptionType::choice: return choice_words(o.choices);
        case OptionType::text: return "a string";
        case OptionType::size: return "a size such as '512MB' or a byte count, above 0";
        case OptionType::extent: return range_words(o) + " or a pair {height, width} of them";
        case OptionType::numbers: return "a finite number or a list of 1 or 3 of them";
        case OptionType::integers: return "a list of " + range_words(o, true);
        case OptionType::pair: return "a pair of " + range_words(o, true);
        case OptionType::object:
        case OptionType::objects:
        case OptionType::table: return std::string(o.expected);
        case OptionType::function: return "a function";
    }
    return "?";
}

}  // namespace

const OptionSpec* OptionSchema::find(std::string_view wanted) const {
    for (const auto& option : options)
        if (option.name == wanted) return &option;
    return nullptr;
}

std::vector<std::string> OptionSchema::names() const {
    std::vector<std::string> out;
    for (const auto& option : options) out.emplace_back(option.name);
    return out;
}

std::string expected_text(const OptionSpec& option) {
    std::string words = type_words(option);
    if (!option.note.empty()) words += " (" + std::string(option.note) + ")";
    return words;
}

std::string default_text(const OptionSpec& option) {
    if (!option.default_note.empty()) return std::string(option.default_note);
    if (const auto* b = std::get_if<bool>(&option.fallback)) return *b ? "true" : "false";
    if (const auto* x = std::get_if<double>(&option.fallback)) return bound_text(*x);
    if (const auto* list = std::get_if<std::vector<double>>(&option.fallback)) {
        std::string words = "{";  // as Lua writes the list: {1, 2, 4}
        for (std::size_t i = 0; i < list->size(); ++i)
            words += (i > 0 ? ", " : "") + bound_text((*list)[i]);
        return words + "}";
    }
    if (const auto* s = std::get_if<std::string>(&option.fallback)) {
        // Appended, not "'" + *s + "'": g++ 12 warns of a false overlap there (-Wrestrict).
        std::string quoted(1, '\'');
        quoted.append(*s).push_back('\'');
        return quoted;
    }
    return option.required ? "required" : "none";
}

void throw_bad_option(const OptionSchema& schema, const OptionSpec& option,
                      const std::string& got) {
    throw ConfigError(std::string(schema.function) + ": option '" + std::string(option.name) +
                      "' must be " + expected_text(option) + ", got " + got);
}

}  // namespace tandem
