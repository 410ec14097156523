#include "plan/measurement_cache.h"

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "base/atomic_file.h"
#include "base/cache_dir.h"
#include "base/enum_names.h"
#include "base/json.h"

namespace tandem {
namespace {

constexpr std::string_view kFormat = "tandem measurements 1";
constexpr std::array<EnumName<CacheUse>, 3> kCacheUses{
    {{CacheUse::none, "none"}, {CacheUse::reuse, "reuse"}, {CacheUse::refresh, "refresh"}}};

// One JSON object's members, in order, with the commas between them; close() ends it.
class ObjectWriter {
public:
    explicit ObjectWriter(std::string& out) : out_(out) {}
    // Starts the member `name`; its value follows in the returned string.
    std::string& member(std::string_view name) {
        out_ += first_ ? "{" : ", ";
        first_ = false;
        append_json_string(out_, name);
        return out_ += ": ";
    }
    void number(std::string_view name, double v) {
        // 17 significant digits read back as the same double: the figures exactly as measured.
        char text[40];
        std::snprintf(text, sizeof text, "%.17g", v);
        member(name) += text;
    }
    void integer(std::string_view name, std::int64_t v) { member(name) += std::to_string(v); }
    void text(std::string_view name, std::string_view v) { append_json_string(member(name), v); }
    template <typename Items, typename Each>
    void list(std::string_view name, const Items& items, Each each) {
        member(name) += "[";
        bool first = true;
        for (const auto& item : items) {
            out_ += first ? "" : ", ";
            first = false;
            each(item);
        }
        out_ += "]";
    }
    void close() { out_ += first_ ? "{}" : "}"; }

private:
    std::string& out_;
    bool first_ = true;
};

void write_dims(std::string& out, const Shape& shape) {
    out += "[";
    for (std::size_t i = 0; i < shape.dims().size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape.dims()[i]);
    out += "]";
}

std::int64_t as_int(std::size_t v) {
    return static_cast<std::int64_t>(v);
}

void write_profile(std::string& out, const NetProfile& p) {
    ObjectWriter o(out);
    o.integer("batch", p.batch);
    write_dims(o.member("input"), p.input);
    o.number("step_ms", p.step_ms);
    o.number("update_ms", p.update_ms);
    o.number("train_flops", p.train_flops);
    o.integer("peak_bytes", as_int(p.peak_bytes));
    o.list("layers", p.layers, [&](const LayerProfile& l) {
        ObjectWriter lo(out);
        lo.text("name", l.name);
        lo.text("kind", l.kind);
        lo.text("options", l.options);
        write_dims(lo.member("output"), l.output);
        lo.integer("parameters", l.parameters);
        lo.number("forward_ms", l.forward_ms);
        lo.number("backward_ms", l.backward_ms);
        lo.number("flops", l.flops);
        lo.integer("parameter_bytes", as_int(l.memory.parameter_bytes));
        lo.integer("output_bytes", as_int(l.memory.output_bytes));
        lo.integer("saved_bytes", as_int(l.memory.saved_bytes));
        lo.list("parameter_tensor_bytes", l.parameter_tensor_bytes,
                [&](std::size_t b) { out += std::to_string(b); });
        lo.integer("transient_bytes", as_int(l.transient_bytes));
        lo.integer("kept_input_bytes", as_int(l.kept_input_bytes));
        lo.close();
    });
    o.close();
}

// Reading: any field missing or of the wrong kind makes the whole file unusable.
struct Unusable {};

bool has_field(const JsonValue& object, std::string_view name) {
    if (object.kind != JsonValue::Kind::object) throw Unusable{};
    for (const JsonMember& m : object.object)
        if (m.key == name) return true;
    return false;
}

const JsonValue& field(const JsonValue& object, std::string_view name) {
    if (object.kind != JsonValue::Kind::object) throw Unusable{};
    for (const JsonMember& m : object.object)
        if (m.key == name) return m.value;
    throw Unusable{};
}

double number(const JsonValue& object, std::string_view name) {
    const JsonValue& v = field(object, name);
    if (v.kind != JsonValue::Kind::number && v.kind != JsonValue::Kind::integer) throw Unusable{};
    return v.number;
}

std::int64_t integer(const JsonValue& v) {
    if (v.kind != JsonValue::Kind::integer) throw Unusable{};
    return v.integer;
}

std::int64_t integer(const JsonValue& object, std::string_view name) {
    return integer(field(object, name));
}

std::size_t bytes(const JsonValue& v) {
    const std::int64_t b = integer(v);
    if (b < 0) throw Unusable{};
    return static_cast<std::size_t>(b);
}

std::size_t bytes(const JsonValue& object, std::string_view name) {
    return bytes(field(object, name));
}

const std::string& text(const JsonValue& object, std::string_view name) {
    const JsonValue& v = field(object, name);
    if (v.kind != JsonValue::Kind::string) throw Unusable{};
    return v.string;
}

const std::vector<JsonValue>& list(const JsonValue& object, std::string_view name) {
    const JsonValue& v = field(object, name);
    if (v.kind != JsonValue::Kind::array) throw Unusable{};
    return v.array;
}

Shape shape(const JsonValue& object, std::string_view name) {
    std::vector<std::int64_t> dims;
    for (const JsonValue& d : list(object, name)) dims.push_back(integer(d));
    return Shape(std::move(dims));
}

int small_count(const JsonValue& object, std::string_view name) {
    const std::int64_t v = integer(object, name);
    if (v < 1 || v > (1 << 20)) throw Unusable{};
    return static_cast<int>(v);
}

NetProfile read_profile(const JsonValue& o) {
    NetProfile p;
    p.batch = integer(o, "batch");
    p.input = shape(o, "input");
    p.step_ms = number(o, "step_ms");
    p.update_ms = number(o, "update_ms");
    p.train_flops = number(o, "train_flops");
    p.peak_bytes = bytes(o, "peak_bytes");
    for (const JsonValue& l : list(o, "layers")) {
        LayerProfile lp;
        lp.name = text(l, "name");
        lp.kind = text(l, "kind");
        lp.options = text(l, "options");
        lp.output = shape(l, "output");
        lp.parameters = integer(l, "parameters");
        lp.forward_ms = number(l, "forward_ms");
        lp.backward_ms = number(l, "backward_ms");
        lp.flops = number(l, "flops");
        lp.memory.parameter_bytes = bytes(l, "parameter_bytes");
        lp.memory.output_bytes = bytes(l, "output_bytes");
        lp.memory.saved_bytes = bytes(l, "saved_bytes");
        for (const JsonValue& b : list(l, "parameter_tensor_bytes"))
            lp.parameter_tensor_bytes.push_back(bytes(b));
        lp.transient_bytes = bytes(l, "transient_bytes");
        lp.kept_input_bytes = bytes(l, "kept_input_bytes");
        if (lp.forward_ms < 0 || lp.backward_ms < 0) throw Unusable{};
        p.layers.push_back(std::move(lp));
    }
    if (p.batch < 1 || p.step_ms < 0 || p.update_ms < 0) throw Unusable{};
    return p;
}

}  // namespace

std::string measurements_json(const Measurements& m, const std::string& key) {
    std::string out;
    ObjectWriter o(out);
    o.text("format", kFormat);
    o.text("key", key);
    o.text("measured_at", m.measured_at);
    if (m.machine) {
        ObjectWriter f(o.member("machine"));
        f.number("copy_gbs", m.machine->copy_gbs);
        f.number("handoff_ms", m.machine->handoff_ms);
        f.number("busy_handoff_ms", m.machine->busy_handoff_ms);
        f.number("crowded_handoff_ms", m.machine->crowded_handoff_ms);
        f.close();
    }
    o.list("profiles", m.profiles, [&](const auto& entry) {
        ObjectWriter e(out);
        e.integer("threads", entry.first.first);
        write_profile(e.member("profile"), entry.second);
        e.close();
    });
    o.list("slowdowns", m.slowdowns, [&](const auto& entry) {
        ObjectWriter e(out);
        e.integer("cores", entry.first.first);
        e.integer("batch", entry.first.second);
        e.number("all", entry.second.all);
        if (entry.second.over) e.number("over", *entry.second.over);
        e.close();
    });
    o.list("update_slowdowns", m.update_slowdowns, [&](const auto& entry) {
        ObjectWriter e(out);
        e.integer("busy", entry.first);
        e.number("slowdown", entry.second);
        e.close();
    });
    o.list("all_reduce", m.all_reduce, [&](const auto& entry) {
        ObjectWriter e(out);
        e.integer("ranks", entry.first.first);
        e.text("algorithm", reduce_algorithm_name(entry.first.second));
        e.number("latency_ms", entry.second.latency_ms);
        e.number("ms_per_byte", entry.second.ms_per_byte);
        e.close();
    });
    o.close();
    return out + "\n";
}

std::optional<Measurements> parse_measurements(std::string_view json, const std::string& key) {
    try {
        const JsonValue root = parse_json(json);
        if (text(root, "format") != kFormat || text(root, "key") != key) return std::nullopt;
        Measurements m;
        m.measured_at = text(root, "measured_at");
        if (has_field(root, "machine")) {
            const JsonValue& f = field(root, "machine");
            const MachineFigures machine{number(f, "copy_gbs"), number(f, "handoff_ms"),
                                         number(f, "busy_handoff_ms"),
                                         number(f, "crowded_handoff_ms")};
            if (machine.copy_gbs <= 0 || machine.handoff_ms < 0 || machine.busy_handoff_ms < 0 ||
                machine.crowded_handoff_ms < 0)
                throw Unusable{};
            m.machine = machine;
        }
        for (const JsonValue& e : list(root, "profiles")) {
            NetProfile p = read_profile(field(e, "profile"));
            const std::int64_t batch = p.batch;
            m.profiles[{small_count(e, "threads"), batch}] = std::move(p);
        }
        for (const JsonValue& e : list(root, "slowdowns")) {
            Measurements::Slowdowns s;
            s.all = number(e, "all");
            if (has_field(e, "over")) s.over = number(e, "over");
            if (s.all < 1 || (s.over && *s.over < 1)) throw Unusable{};
            m.slowdowns[{small_count(e, "cores"), integer(e, "batch")}] = s;
        }
        for (const JsonValue& e : list(root, "update_slowdowns")) {
            const double slowdown = number(e, "slowdown");
            if (slowdown < 1) throw Unusable{};
            m.update_slowdowns[small_count(e, "busy")] = slowdown;
        }
        for (const JsonValue& e : list(root, "all_reduce")) {
            const Measurements::AllReduceLine line{number(e, "latency_ms"),
                                                   number(e, "ms_per_byte")};
            if (line.latency_ms < 0 || line.ms_per_byte < 0) throw Unusable{};
            m.all_reduce[{small_count(e, "ranks"), parse_reduce_algorithm(text(e, "algorithm"))}] =
                line;
        }
        return m;
    } catch (const Unusable&) {
        return std::nullopt;
    } catch (const std::exception&) {  // not JSON, or an algorithm we do not know
        return std::nullopt;
    }
}

std::string_view cache_use_name(CacheUse use) {
    return enum_name(kCacheUses, use);
}

CacheUse parse_cache_use(std::string_view name) {
    return parse_enum(kCacheUses, name, "unknown cache use");
}

MeasurementCache::MeasurementCache(std::string key, CacheUse use, std::filesystem::path file)
    : key_(std::move(key)), use_(use),
      file_(file.empty() ? cache_file("measurements", key_) : std::move(file)) {}

Measurements MeasurementCache::load() const {
    if (file_.empty() || use_ != CacheUse::reuse) return {};
    try {
        const std::vector<char> bytes = read_file(file_.string());
        return parse_measurements(std::string_view(bytes.data(), bytes.size()), key_)
            .value_or(Measurements{});
    } catch (const std::exception&) {
        return {};  // missing or unreadable: measure
    }
}

void MeasurementCache::save(const Measurements& m) const {
    if (!file_.empty() && use_ != CacheUse::none)
        write_cache_file(file_, measurements_json(m, key_));
}

}  // namespace tandem
