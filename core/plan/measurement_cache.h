// The figures a MeasuredCostModel measures (profiles, contention, all-reduce), kept in a file
// between runs: `tandem run --plan=auto` and `tandem plan` of the same net, options, CPU and
// build plan in about a second instead of profiling for a minute. The file names everything the
// figures depend on (its key, in full) and holds them exactly; a file that is missing, damaged
// or for another key is measured afresh, never trusted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "parallel/communicator.h"
#include "plan/machine_probe.h"
#include "plan/profiler.h"

namespace tandem {

struct Measurements {
    // How much slower a step runs with every core busy, and with twice as many busy threads as
    // cores beyond the proportional share (measured when a plan first has that many).
    struct Slowdowns {
        double all = 1;
        std::optional<double> over;
    };
    struct AllReduceLine {
        double latency_ms = 0, ms_per_byte = 0;
    };
    std::map<std::pair<int, std::int64_t>, NetProfile> profiles;  // (threads, batch)
    std::map<std::pair<int, std::int64_t>, Slowdowns> slowdowns;  // (cores, batch)
    std::map<int, double> update_slowdowns;                       // busy devices
    std::map<std::pair<int, ReduceAlgorithm>, AllReduceLine> all_reduce;
    // Copies and hand-offs: measured in milliseconds, but kept too, so that a plan made from
    // the cache is the plan made when the figures were measured.
    std::optional<MachineFigures> machine;
    std::string measured_at;  // UTC, ISO 8601: when the first of them was measured
};

// The text a cache file holds, and the figures read back from it: none when the text is not
// such a file or is for another key.
std::string measurements_json(const Measurements& m, const std::string& key);
std::optional<Measurements> parse_measurements(std::string_view text, const std::string& key);

// What a measured cost model does with the cache: nothing; reuse what an earlier run kept and
// keep what it measures besides; or measure everything afresh and keep that (a machine that
// was busy when the kept figures were taken).
enum class CacheUse { none, reuse, refresh };
std::string_view cache_use_name(CacheUse use);
CacheUse parse_cache_use(std::string_view name);  // ConfigError listing the choices

class MeasurementCache {
public:
    // `key`: what the figures depend on, as text. The file: `file`, or by default one named
    // after the key's hash in cache_dir() (none when no cache folder is set). `use`: reuse or
    // refresh (whose load() finds nothing).
    explicit MeasurementCache(std::string key, CacheUse use = CacheUse::reuse,
                              std::filesystem::path file = {});
    const std::filesystem::path& file() const { return file_; }
    // What the file holds for this key (empty: nothing usable).
    Measurements load() const;
    // Replaces the file (atomically). An unwritable cache costs the next run a measurement,
    // nothing more: failures are not errors.
    void save(const Measurements& m) const;

private:
    std::string key_;
    CacheUse use_;
    std::filesystem::path file_;
};

}  // namespace tandem
