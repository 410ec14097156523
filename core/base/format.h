// Small text helpers for messages: sizes in bytes, lists joined by a separator, the time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

// 1536 -> "1.5 KiB", 100663296 -> "96.0 MiB".
std::string format_bytes(double bytes);

// Parses "512MB", "1.5GiB", "4096" (bytes) into a byte count; throws ConfigError on bad text.
std::size_t parse_bytes(std::string_view text);

std::string join(const std::vector<std::string>& parts, std::string_view separator);

// Now, in UTC, as ISO 8601 ("2026-11-27T16:02:31Z"): when a measurement was taken.
std::string utc_now();

}  // namespace tandem
