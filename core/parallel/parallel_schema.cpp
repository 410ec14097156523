#include "parallel/parallel_schema.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/error.h"

namespace tandem {
namespace {

template <class T>
const T& value_as(const OptionValue& value, std::string_view option, const char* expected) {
    const T* v = std::get_if<T>(&value);
    TANDEM_CHECK_AS(ConfigError, v != nullptr) << "parallel." << option << " must be " << expected;
    return *v;
}

int count_at_least(const OptionValue& value, std::string_view option, std::int64_t minimum) {
    const std::int64_t n = value_as<std::int64_t>(value, option, "a whole number");
    TANDEM_CHECK_AS(ConfigError, n >= minimum && n <= (std::int64_t(1) << 30))
        << "parallel." << option << " must be at least " << minimum
        << (minimum == 0 ? " (0: off)" : "") << ", got " << n;
    return static_cast<int>(n);
}

bool flag_of(const OptionValue& value, std::string_view option) {
    return value_as<bool>(value, option, "true or false");
}

const std::string& choice_of(const OptionValue& value, std::string_view option) {
    return value_as<std::string>(value, option, "a string");
}

// A real option's value: a number (a whole one as given by C++ too) in [low, high], or below
// high only when `open_high`; ConfigError naming the option and the range otherwise.
double real_in(const OptionValue& value, std::string_view option, double low, double high,
               bool open_high, const char* meaning) {
    double x = 0;
    if (const auto* n = std::get_if<std::int64_t>(&value))
        x = static_cast<double>(*n);
    else
        x = value_as<double>(value, option, "a number");
    const bool ok = std::isfinite(x) && x >= low && (open_high ? x < high : x <= high);
    TANDEM_CHECK_AS(ConfigError, ok)
        << "parallel." << option << " must be in [" << low << ", " << high
        << (open_high ? ")" : "]") << " (" << meaning << "), got " << x;
    return x;
}

std::vector<ParallelOption> make_schema() {
    std::vector<ParallelOption> s;
    s.push_back({"groups",
                 OptionKind::count,
                 "worker groups (data parallel): each holds a replica of the net",
                 "groups",
                 {},
                 1,
                 true,
                 true,
                 [](const ParallelOptions& p) -> OptionValue { return std::int64_t(p.groups); },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.groups = count_at_least(v, "groups", 1);
                 }});
    s.push_back({"stages",
                 OptionKind::count,
                 "pipeline stages per group (model parallel)",
                 "stages",
                 {},
                 1,
                 true,
                 true,
                 [](const ParallelOptions& p) -> OptionValue { return std::int64_t(p.stages); },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.stages = count_at_least(v, "stages", 1);
                 }});
    s.push_back(
        {"micro_batches",
         OptionKind::count,
         "micro-batches each group's share of a batch is cut into",
         "micro_batches",
         {},
         1,
         true,
         true,
         [](const ParallelOptions& p) -> OptionValue { return std::int64_t(p.micro_batches); },
         [](ParallelOptions& p, const OptionValue& v) {
             p.micro_batches = count_at_least(v, "micro_batches", 1);
         }});
    s.push_back({"pipeline",
                 OptionKind::choice,
                 "the pipeline schedule: fill-drain (gpipe) or one forward, one backward",
                 "pipeline",
                 {"gpipe", "1f1b"},
                 0,
                 true,
                 true,
                 [](const ParallelOptions& p) -> OptionValue {
                     return std::string(pipeline_schedule_name(p.pipeline));
                 },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.pipeline = parse_pipeline_schedule(choice_of(v, "pipeline"));
                 }});
    s.push_back(
        {"split",
         OptionKind::cuts,
         "where stages end: layer names or 1-based indices, 'auto' (profiled), or none (even layer "
         "counts)",
         "split",
         {},
         0,
         true,
         true,
         [](const ParallelOptions& p) -> OptionValue {
             if (p.auto_split) return std::string("auto");
             return p.cuts;
         },
         [](ParallelOptions& p, const OptionValue& v) {
             if (const auto* text = std::get_if<std::string>(&v)) {
                 TANDEM_CHECK_AS(ConfigError, *text == "auto")
                     << "parallel.split must be 'auto' or a list of layers, got '" << *text << "'";
                 p.auto_split = true, p.cuts.clear();
                 return;
             }
             p.auto_split = false;
             p.cuts = value_as<std::vector<std::size_t>>(v, "split", "'auto' or a list of layers");
         }});
    s.push_back({"placement",
                 OptionKind::placement,
                 "which layers each stage runs, as lists of names ('graph.node' for a graph's): "
                 "branches on "
                 "different devices at once",
                 "placement",
                 {},
                 0,
                 true,
                 true,
                 [](const ParallelOptions& p) -> OptionValue { return p.placement; },
                 [](ParallelOptions& p, const OptionValue& v) {
                     const auto& stages = value_as<StageNames>(
                         v, "placement", "a list of stages, each a list of layer names");
                     // The stages are the placement's (stages is set first): 1, the default, or as
                     // many.
                     TANDEM_CHECK_AS(ConfigError,
                                     stages.empty() || p.stages == 1 ||
                                         static_cast<std::size_t>(p.stages) == stages.size())
                         << "parallel.placement lists " << stages.size()
                         << " stages, parallel.stages is " << p.stages;
                     if (!stages.empty()) p.stages = static_cast<int>(stages.size());
                     p.placement = stages;
                 }});
    s.push_back(
        {"recompute",
         OptionKind::stage_flags,
         "activation recomputation: true for every stage, or a flag per stage",
         "recompute",
         {},
         0,
         true,
         true,
         [](const ParallelOptions& p) -> OptionValue { return p.recompute; },
         [](ParallelOptions& p, const OptionValue& v) {
             if (const auto* one = std::get_if<bool>(&v)) {
                 p.recompute = {*one};
                 return;
             }
             const auto& flags = value_as<std::vector<bool>>(
                 v, "recompute", "a boolean or a list of booleans, one per stage");
             // A list is one flag per stage (stages is set first); one for all is a boolean.
             TANDEM_CHECK_AS(ConfigError, flags.size() == static_cast<std::size_t>(p.stages))
                 << "parallel.recompute lists " << flags.size() << " flag"
                 << (flags.size() == 1 ? "" : "s") << " for " << p.stages << " stage"
                 << (p.stages == 1 ? "" : "s")
                 << ": give one flag per stage, or true or false for every stage";
             p.recompute = flags;
         }});
    s.push_back({"batch_norm",
                 OptionKind::choice,
                 "batch norm across micro-batches: per micro-batch, deferred running statistics, "
                 "or synchronised",
                 "batch_norm",
                 {"micro", "deferred", "sync"},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue {
                     return std::string(batch_norm_mode_name(p.batch_norm));
                 },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.batch_norm = parse_batch_norm_mode(choice_of(v, "batch_norm"));
                 }});
    s.push_back({"algorithm",
                 OptionKind::choice,
                 "the gradient all-reduce's algorithm",
                 "",
                 {"ring", "tree"},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue {
                     return std::string(reduce_algorithm_name(p.algorithm));
                 },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.algorithm = parse_reduce_algorithm(choice_of(v, "algorithm"));
                 }});
    s.push_back({"bucket_bytes",
                 OptionKind::bytes,
                 "gradient all-reduce bucket size (the recipe flag in MB)",
                 "bucket_mb",
                 {},
                 1,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue {
                     return static_cast<std::int64_t>(p.bucket_bytes);
                 },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.bucket_bytes =
                         static_cast<std::size_t>(count_at_least(v, "bucket_bytes", 1));
                 }});
    s.push_back({"overlap",
                 OptionKind::flag,
                 "all-reduce each bucket during the last backward (false: after it)",
                 "overlap",
                 {},
                 0,
                 false,
                 false,
                 [](const ParallelOptions& p) -> OptionValue { return p.overlap_backward; },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.overlap_backward = flag_of(v, "overlap");
                 }});
    s.push_back({"deterministic",
                 OptionKind::flag,
                 "every reduction in one canonical order: the same bits run after run",
                 "deterministic",
                 {},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue { return p.deterministic; },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.deterministic = flag_of(v, "deterministic");
                 }});
    s.push_back(
        {"average_every",
         OptionKind::count,
         "model averaging every k steps instead of synchronous SGD (0: off)",
         "average_every",
         {},
         0,
         true,
         false,
         [](const ParallelOptions& p) -> OptionValue { return std::int64_t(p.average_every); },
         [](ParallelOptions& p, const OptionValue& v) {
             p.average_every = count_at_least(v, "average_every", 0);
         }});
    s.push_back({"averaging",
                 OptionKind::choice,
                 "what model averaging does: the mean, block momentum (BMUF), elastic averaging "
                 "(EASGD), or the "
                 "mean with the optimizer's state",
                 "averaging",
                 {"plain", "bmuf", "easgd", "momentum"},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue {
                     return std::string(averaging_algorithm_name(p.averaging));
                 },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.averaging = parse_averaging_algorithm(choice_of(v, "averaging"));
                 }});
    s.push_back({"block_momentum",
                 OptionKind::real,
                 "BMUF's block momentum, in [0, 1) (0: 1 - 1/replicas, as Chen and Huo)",
                 "block_momentum",
                 {},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue { return p.block_momentum; },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.block_momentum =
                         real_in(v, "block_momentum", 0, 1, true, "0: 1 - 1/replicas");
                 }});
    s.push_back({"block_lr",
                 OptionKind::real,
                 "BMUF's block learning rate, above 0 (1 as Chen and Huo)",
                 "block_lr",
                 {},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue { return p.block_lr; },
                 [](ParallelOptions& p, const OptionValue& v) {
                     const double x = real_in(v, "block_lr", 0, HUGE_VAL, true, "a rate");
                     TANDEM_CHECK_AS(ConfigError, x > 0)
                         << "parallel.block_lr must be above 0, got 0";
                     p.block_lr = x;
                 }});
    s.push_back({"block_nesterov",
                 OptionKind::flag,
                 "BMUF: Nesterov-style block momentum (each block starts from the global model "
                 "plus its momentum)",
                 "block_nesterov",
                 {},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue { return p.block_nesterov; },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.block_nesterov = flag_of(v, "block_nesterov");
                 }});
    s.push_back({"elastic_alpha",
                 OptionKind::real,
                 "EASGD's moving rate, in [0, 1] (0: 0.9/replicas, as Zhang et al.)",
                 "elastic_alpha",
                 {},
                 0,
                 true,
                 false,
                 [](const ParallelOptions& p) -> OptionValue { return p.elastic_alpha; },
                 [](ParallelOptions& p, const OptionValue& v) {
                     p.elastic_alpha = real_in(v, "elastic_alpha", 0, 1, false, "0: 0.9/replicas");
                 }});
    s.push_back({"mpi",
                 OptionKind::flag,
                 "spread the groups over the processes of an MPI job (on under mpirun)",
                 "",
                 {},
                 0,
                 false,
                 false,
                 [](const ParallelOptions& p) -> OptionValue { return p.mpi; },
                 [](ParallelOptions& p, const OptionValue& v) { p.mpi = flag_of(v, "mpi"); }});
    return s;
}

}  // namespace

const std::vector<ParallelOption>& parallel_option_schema() {
    static const std::vector<ParallelOption> schema = make_schema();
    return schema;
}

const ParallelOption* find_parallel_option(std::string_view name) {
    for (const auto& option : parallel_option_schema())
        if (option.name == name) return &option;
    return nullptr;
}

const std::vector<RenamedOption>& renamed_parallel_options() {
    static const std::vector<RenamedOption> renamed{{"schedule", "pipeline"}};
    return renamed;
}

std::string option_text(const ParallelOption& option, const OptionValue& value) {
    std::ostringstream out;
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) {
                out << (v ? "true" : "false");
            } else if constexpr (std::is_same_v<T, std::int64_t> ||
                                 std::is_same_v<T, std::string> || std::is_same_v<T, double>) {
                out << v;
            } else if constexpr (std::is_same_v<T, StageNames>) {
                out << "{";
                for (std::size_t s = 0; s < v.size(); ++s) {
                    out << (s ? ", {" : "{");
                    for (std::size_t i = 0; i < v[s].size(); ++i)
                        out << (i ? ", '" : "'") << v[s][i] << "'";
                    out << "}";
                }
                out << "}";
            } else {
                out << "{";
                for (std::size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
                out << "}";
            }
        },
        value);
    if (option.kind == OptionKind::cuts && out.str() == "{}") return "none";
    if (option.kind == OptionKind::stage_flags && out.str() == "{}") return "false";
    if (option.kind == OptionKind::placement && out.str() == "{}") return "none";
    return out.str();
}

double option_as_number(const ParallelOption& option, const OptionValue& value) {
    if (const auto* b = std::get_if<bool>(&value)) return *b ? 1 : 0;
    if (const auto* n = std::get_if<std::int64_t>(&value)) return static_cast<double>(*n);
    if (const auto* x = std::get_if<double>(&value)) return *x;
    if (const auto* text = std::get_if<std::string>(&value)) {
        const auto it = std::find(option.choices.begin(), option.choices.end(), *text);
        if (it != option.choices.end()) return static_cast<double>(it - option.choices.begin());
    }
    // A list (or a text outside the choices, as split's 'auto'): a 52-bit FNV-1a hash of its
    // text, exact in a double, so that two ranks compare equal only on the same value (but
    // for a collision, about one in 4.5e15).
    std::uint64_t hash = 14695981039346656037ull;
    for (unsigned char c : option_text(option, value)) hash = (hash ^ c) * 1099511628211ull;
    return static_cast<double>(hash >> 12);
}

bool option_is_list(const OptionValue& value) {
    return std::holds_alternative<std::vector<std::size_t>>(value) ||
           std::holds_alternative<std::vector<bool>>(value) ||
           std::holds_alternative<StageNames>(value);
}

}  // namespace tandem
