#include "layers/init.h"

#include <cmath>

#include "base/error.h"
#include "base/format.h"
#include "base/rng.h"

namespace tandem {
namespace {

enum class Draw { normal, uniform, zeros };

struct Scheme {
    std::string_view name;
    Draw draw;
    bool fan_out_counts;  // whether the scale uses fan_in + fan_out (Glorot) or fan_in (He)
    double numerator;     // std = sqrt(numerator / fan) for normal, bound for uniform
};

constexpr Scheme kSchemes[] = {
    {"kaiming", Draw::normal, false, 2.0}, {"kaiming_uniform", Draw::uniform, false, 6.0},
    {"xavier", Draw::uniform, true, 6.0},  {"xavier_normal", Draw::normal, true, 2.0},
    {"zeros", Draw::zeros, false, 0.0},
};

const Scheme* find_scheme(std::string_view name) {
    for (const auto& s : kSchemes)
        if (s.name == name) return &s;
    return nullptr;
}

}  // namespace

bool is_init_scheme(std::string_view scheme) { return find_scheme(scheme) != nullptr; }

std::vector<std::string> init_schemes() {
    std::vector<std::string> names;
    for (const auto& s : kSchemes) names.emplace_back(s.name);
    return names;
}

void init_tensor(Tensor& t, std::string_view scheme, std::int64_t fan_in, std::int64_t fan_out,
                 std::uint64_t seed) {
    const Scheme* s = find_scheme(scheme);
    TANDEM_CHECK_AS(ConfigError, s != nullptr)
        << "unknown init scheme '" << scheme << "' (known: " << join(init_schemes(), ", ") << ")";
    std::vector<float> values(static_cast<std::size_t>(t.numel()), 0.f);
    if (s->draw != Draw::zeros) {
        const std::int64_t fan = s->fan_out_counts ? fan_in + fan_out : fan_in;
        TANDEM_CHECK_AS(ConfigError, fan_in > 0 && (!s->fan_out_counts || fan_out > 0))
            << "init '" << scheme << "' of " << t.description()
            << " needs positive fans, got fan_in " << fan_in << ", fan_out " << fan_out;
        const double scale = std::sqrt(s->numerator / static_cast<double>(fan));
        // Each value depends on (seed, index) alone, so threads may draw them in any order: a
        // VGG-16 (138 M weights) no longer takes seconds on one core.
        const auto n = static_cast<std::int64_t>(values.size());
#pragma omp parallel for schedule(static) if (n > (1 << 16))
        for (std::int64_t j = 0; j < n; ++j) {
            const auto i = static_cast<std::size_t>(j);
            const double unit = s->draw == Draw::normal
                                    ? static_cast<double>(rng_normal(seed, i))
                                    : 2.0 * static_cast<double>(rng_uniform(seed, i)) - 1.0;
            values[i] = static_cast<float>(scale * unit);
        }
    }
    t.copy_from(values);
}

}  // namespace tandem
