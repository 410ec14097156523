#include "data/synthetic_interactions.h"

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/rng.h"
#include "data/interaction_text.h"

namespace tandem {
namespace {

std::int64_t draw(std::uint64_t key, std::uint64_t counter, std::int64_t count) {
    return std::int64_t(rng_bits(key, counter) % std::uint64_t(count));
}

}  // namespace

void write_synthetic_interactions(std::ostream& out, const SyntheticInteractionOptions& o) {
    TANDEM_CHECK_AS(ConfigError, o.users >= 1 && o.length >= 1 && o.features >= 1 &&
                                     o.classes >= 1 && o.classes <= (1 << 20))
        << "users, length, features and classes must be positive";
    TANDEM_CHECK_AS(ConfigError, o.items >= o.classes && o.items <= kMaxItemId + 1)
        << "items must be in [classes, " << kMaxItemId + 1 << "], got " << o.items;
    out << "# user\titems (oldest first)\tfeatures (index:value)\tlabel\n";
    for (std::int64_t u = 0; u < o.users; ++u) {
        const std::uint64_t key = rng_key(o.seed, std::uint64_t(u));
        const std::int64_t c = draw(key, 0, o.classes);
        const std::int64_t n = 1 + draw(key, 1, o.length);
        out << "user" << u << '\t';
        // The class's ids are c, c + classes, c + 2 classes, ... below `items`.
        const std::int64_t own = (o.items - c + o.classes - 1) / o.classes;
        for (std::int64_t j = 0; j < n; ++j) {
            const bool from_class = rng_uniform(key, 10 + 3 * std::uint64_t(j)) < 0.7f;
            const std::int64_t id = from_class ? c + o.classes * draw(key, 11 + 3 * j, own)
                                               : draw(key, 12 + 3 * j, o.items);
            out << (j ? " " : "") << id;
        }
        out << '\t';
        const std::int64_t strong = c % o.features;
        bool first = true;
        for (std::int64_t f = 0; f < o.features; ++f) {
            const float u1 = rng_uniform(key, 100000 + 2 * std::uint64_t(f));
            const float u2 = rng_uniform(key, 100001 + 2 * std::uint64_t(f));
            if (f != strong && u1 >= 0.3f) continue;  // sparse: most features absent
            const float v = f == strong ? 0.5f + 0.5f * u2 : 0.5f * u2;
            out << (first ? "" : " ") << f << ':' << v;
            first = false;
        }
        out << '\t' << c << '\n';
    }
}

void write_synthetic_interactions(const std::string& path,
                                  const SyntheticInteractionOptions& options, bool overwrite) {
    std::error_code ec;
    TANDEM_CHECK_AS(ConfigError, overwrite || !std::filesystem::exists(path, ec))
        << path << " already exists (--overwrite replaces it)";
    const std::string partial = path + ".partial";
    try {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        TANDEM_CHECK_AS(DataError, out.good()) << "cannot write '" << partial << "'";
        write_synthetic_interactions(out, options);
        out.flush();
        TANDEM_CHECK_AS(DataError, out.good()) << "writing '" << partial << "' failed";
    } catch (...) {
        std::filesystem::remove(partial, ec);  // nothing half-written stays behind
        throw;
    }
    std::filesystem::rename(partial, path, ec);
    TANDEM_CHECK_AS(DataError, !ec)
        << "cannot move " << partial << " to " << path << ": " << ec.message();
}

}  // namespace tandem
