#include "layers/init.h"

#include <algorithm>
#include <cmath>
#include <thread>

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

bool is_init_scheme(std::string_view scheme) {
    return find_scheme(scheme) != nullptr;
}

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
        auto draw = [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) {
                const double unit = s->draw == Draw::normal
                                        ? static_cast<double>(rng_normal(seed, i))
                                        : 2.0 * static_cast<double>(rng_uniform(seed, i)) - 1.0;
                values[i] = static_cast<float>(scale * unit);
            }
        };
        // Each value depends on (seed, index) alone, so threads may draw parts of a large tensor
        // (VGG-16's 103 M-weight layer took seconds on one core). Plain threads, not OpenMP:
        // ThreadSanitizer sees their joins.
        const std::size_t n = values.size();
        const std::size_t parts =
            n >= (std::size_t(1) << 20) ? std::max(1u, std::thread::hardware_concurrency()) : 1;
        std::vector<std::thread> threads;
        for (std::size_t p = 1; p < parts; ++p)
            threads.emplace_back(draw, n * p / parts, n * (p + 1) / parts);
        draw(0, n / parts);
        for (auto& t : threads) t.join();
    }
    t.copy_from(values);
}

}  // namespace tandem
