#include "data/interaction_text.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "base/error.h"

namespace tandem {
namespace {

constexpr const char* kFieldNames[] = {"user", "items", "features", "label"};

// Where a message points: "data.tsv:7: field 2 (items): ".
struct Place {
    const std::string& file;
    std::int64_t line;
    int field;  // 1-based
};

std::ostream& operator<<(std::ostream& out, const Place& p) {
    out << p.file << ":" << p.line;
    if (p.field > 0) out << ": field " << p.field << " (" << kFieldNames[p.field - 1] << ")";
    return out << ": ";
}

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    for (std::size_t at; (at = text.find(separator, start)) != std::string_view::npos;) {
        parts.push_back(text.substr(start, at - start));
        start = at + 1;
    }
    parts.push_back(text.substr(start));
    return parts;
}

// The space-separated tokens of a field (runs of spaces are one separator).
std::vector<std::string_view> tokens(std::string_view field) {
    std::vector<std::string_view> out;
    for (std::string_view t : split(field, ' '))
        if (!t.empty()) out.push_back(t);
    return out;
}

// A whole number in [0, high]: all of `text`, digits only (no sign, no exponent).
std::int64_t whole(std::string_view text, std::int64_t high, const Place& at, const char* what) {
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    TANDEM_CHECK_AS(DataError, ec == std::errc() && end == text.data() + text.size() && v >= 0 &&
                                   v <= high && !text.empty())
        << at << "'" << text << "' is not " << what << " (a whole number in [0, " << high << "])";
    return v;
}

float value(std::string_view text, const Place& at) {
    // std::from_chars for float needs a newer libstdc++ than some builds have: strtof over a
    // copy, checking it read every character.
    const std::string copy(text);
    char* end = nullptr;
    const float v = copy.empty() ? NAN : std::strtof(copy.c_str(), &end);
    TANDEM_CHECK_AS(DataError,
                    !copy.empty() && end == copy.c_str() + copy.size() && std::isfinite(v))
        << at << "feature value '" << text << "' is not a finite number";
    return v;
}

InteractionLine parse_line(std::string_view text, const std::string& name, std::int64_t number) {
    const std::vector<std::string_view> fields = split(text, '\t');
    TANDEM_CHECK_AS(DataError, fields.size() == 4)
        << Place{name, number, 0} << fields.size() << " tab-separated field(s), 4 expected: "
        << "user, items, features, label";
    InteractionLine out;
    out.line = number;
    const Place user{name, number, 1}, items{name, number, 2}, features{name, number, 3},
        label{name, number, 4};
    TANDEM_CHECK_AS(DataError, !fields[0].empty() && fields[0].size() <= kMaxUserIdBytes)
        << user << "a user id of 1 to " << kMaxUserIdBytes << " bytes expected, got "
        << fields[0].size();
    out.user = std::string(fields[0]);
    for (std::string_view t : tokens(fields[1]))
        out.items.push_back(whole(t, kMaxItemId, items, "an item id"));
    std::set<std::int64_t> seen;
    for (std::string_view t : tokens(fields[2])) {
        const std::size_t colon = t.find(':');
        TANDEM_CHECK_AS(DataError, colon != std::string_view::npos)
            << features << "'" << t << "' is not an index:value pair";
        const std::int64_t index =
            whole(t.substr(0, colon), std::int64_t(1) << 30, features, "a feature index");
        TANDEM_CHECK_AS(DataError, seen.insert(index).second)
            << features << "feature index " << index << " is given twice";
        out.features.emplace_back(index, value(t.substr(colon + 1), features));
    }
    const std::vector<std::string_view> label_tokens = tokens(fields[3]);
    TANDEM_CHECK_AS(DataError, label_tokens.size() == 1)
        << label << "one class number expected, got '" << fields[3] << "'";
    out.label = static_cast<std::int32_t>(
        whole(label_tokens[0], std::numeric_limits<std::int32_t>::max(), label, "a class number"));
    return out;
}

}  // namespace

std::vector<InteractionLine> parse_interaction_text(std::istream& in, const std::string& name) {
    std::vector<InteractionLine> out;
    std::string text;
    for (std::int64_t number = 1; std::getline(in, text); ++number) {
        if (!text.empty() && text.back() == '\r') text.pop_back();
        if (text.find_first_not_of(" \t") == std::string::npos || text[0] == '#') continue;
        out.push_back(parse_line(text, name, number));
    }
    TANDEM_CHECK_AS(DataError, !out.empty())
        << name << " holds no example (one a line: user, items, features, label, tab-separated)";
    return out;
}

std::vector<InteractionLine> read_interaction_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    TANDEM_CHECK_AS(DataError, in.good()) << "cannot open interaction file '" << path << "'";
    return parse_interaction_text(in, path);
}

}  // namespace tandem
