// Whole-file reads and atomic whole-file writes, for checkpoints and other files a crash must
// never leave half-written.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace tandem {

// Writes `bytes` to a temporary file in the target's directory, fsyncs it, renames it over
// `path` and fsyncs the directory, so a reader sees either the previous file or the new one,
// even after a crash. On any failure the temporary is removed, the previous file is left as it
// was, and a DataError names the path and the system's reason. A temporary that a killed
// process left beside `path` is removed by the next write of `path`.
void write_file_atomic(const std::string& path, std::span<const char> bytes);

// The whole file; DataError naming the path and the reason when it is missing or unreadable.
std::vector<char> read_file(const std::string& path);

}  // namespace tandem
