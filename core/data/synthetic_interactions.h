// Synthetic interaction data in the text format (interaction_text.h), for tests and for users
// to try the interaction pipeline (`tandem gen-interactions`). Each user's class c is drawn at
// random; 70% of their items are ids with id % classes == c, and feature c % features is large,
// the others sparse noise: both the sequence and the features tell the label, so the compound
// net's two branches each have something to learn.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tandem {

struct SyntheticInteractionOptions {
    std::int64_t users = 256;    // examples, one a user
    std::int64_t items = 100;    // item ids 0 .. items - 1
    std::int64_t length = 12;    // sequences of 1 .. length items
    std::int64_t features = 16;  // feature indices 0 .. features - 1
    std::int64_t classes = 4;
    std::uint64_t seed = 1;
};

// ConfigError for an option out of range (items fewer than classes, say).
void write_synthetic_interactions(std::ostream& out, const SyntheticInteractionOptions& options);

// Into a new file at `path`, written aside and renamed when complete. ConfigError when the
// file exists and not `overwrite`; DataError when it cannot be written.
void write_synthetic_interactions(const std::string& path,
                                  const SyntheticInteractionOptions& options, bool overwrite);

}  // namespace tandem
