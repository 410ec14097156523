// The text format of users' interaction data (docs/data-format.md, "Interaction data"): one
// example a line, four tab-separated fields,
//
//   user <TAB> item item ... <TAB> index:value index:value ... <TAB> label
//
// the items oldest first (non-negative ids), the features sparse (indices from 0), the label a
// class number. Lines starting with '#' and blank lines are skipped; a '\r' ending (a file from
// Windows) is dropped. This file only parses: interactions.h fixes the length and width.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <utility>
#include <vector>

namespace tandem {

// The largest item id: ids are shifted by 1 (0 pads) and stored as float32, which holds every
// whole number up to 2^24 exactly.
inline constexpr std::int64_t kMaxItemId = (std::int64_t(1) << 24) - 2;
// User ids become part of the LMDB key (at most 511 bytes), after the record number.
inline constexpr std::size_t kMaxUserIdBytes = 256;

struct InteractionLine {
    std::string user;
    std::vector<std::int64_t> items;                       // oldest first, as written
    std::vector<std::pair<std::int64_t, float>> features;  // (index, value), as written
    std::int32_t label = 0;
    std::int64_t line = 0;  // 1-based, for messages
};

// Every example of `in`; `name` (the file) is what messages say. DataError naming the file, the
// line and the field ("data.tsv:7: field 2 (items): 'x3' is not an item id (a whole number in
// [0, 16777214])") for a wrong field count, a non-number, a negative or too large id or label,
// a feature index given twice, or a value that is not finite; and for a file of no example.
std::vector<InteractionLine> parse_interaction_text(std::istream& in, const std::string& name);

// The file at `path`; DataError naming it when it cannot be opened.
std::vector<InteractionLine> read_interaction_text(const std::string& path);

}  // namespace tandem
