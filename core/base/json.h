// A small, strict JSON reader and the string quoting our writers share.
//
// The reader covers what safetensors headers and our own files (metrics logs) hold: objects,
// arrays, strings (all escapes, \u with surrogate pairs, to UTF-8), integers kept exact as
// int64, other numbers as double, true, false and null. It is strict: duplicate keys, leading
// zeros, integers beyond 64 bits, raw control characters in strings and trailing text other
// than whitespace are errors. Errors are JsonError with the byte offset; callers turn them into
// their own DataError naming the file. Callers check kinds themselves (a safetensors offset
// must be an integer, not a number).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem {

struct JsonMember;  // an object's entry: key and value (below)

struct JsonValue {
    enum class Kind { object, array, string, integer, number, boolean, null };
    Kind kind = Kind::object;
    std::size_t offset = 0;  // where the value starts in the text, for messages
    std::string string;
    std::int64_t integer = 0;  // Kind::integer
    double number = 0;         // Kind::number (and Kind::integer, converted)
    bool boolean = false;
    std::vector<JsonValue> array;
    // In the order of the text. (A member struct rather than std::pair: a pair of an incomplete
    // JsonValue is ill-formed, and clang refuses it.)
    std::vector<JsonMember> object;

    // "object", "array", "string", "integer", "number", "boolean", "null".
    std::string_view kind_name() const;
};

struct JsonMember {
    std::string key;
    JsonValue value;
};

class JsonError : public std::runtime_error {
public:
    JsonError(const std::string& message, std::size_t offset)
        : std::runtime_error(message), offset_(offset) {}
    std::size_t offset() const { return offset_; }

private:
    std::size_t offset_;
};

// Parses one value that spans all of `text` (surrounding whitespace allowed).
JsonValue parse_json(std::string_view text);

// Appends `text` as a JSON string literal, quotes included (control characters as \u00XX).
void append_json_string(std::string& out, std::string_view text);

}  // namespace tandem
