// T.data.lmdb / folder / list (tandem.Source) and T.data.Loader (tandem.Loader): the image
// pipeline of core/data (issue 3) from Lua.
//
//   local train = assert(T.data.folder('photos/train'))
//   local loader = T.data.Loader{source = train, batch = 64, threads = 4,
//                                transforms = {resize = 72, crop = 64, random_crop = true, flip =
//                                true}}
//   for images, labels in loader:batches(epoch) do engine:step(images, labels) end
//
// Sample numbers on the Lua side are 1-based (source:label(1) is the first sample); labels are
// the class numbers 0 .. classes - 1, as the loss expects. A shard is {index = 1..count, count}.
// Return conventions: a path that does not exist gives nil, message (a recipe may fall back);
// a source that exists but is malformed, and bad options, raise. A loader's errors (a stage
// failing, a corrupt sample with strict = true) raise from the iterator or loader:next().
#include "binding.h"
#include "data/file_list_source.h"
#include "data/lmdb_source.h"
#include "data/loader.h"
#include "data/pipeline_schema.h"
#include "data/source_schema.h"
#include "objects.h"
#include "option_table.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

constexpr const char* kSourceType = "tandem.Source";
constexpr const char* kLoaderType = "tandem.Loader";
using SourceBox = std::shared_ptr<const DataSource>;
using LoaderBox = std::shared_ptr<Loader>;

const SourceBox& check_source(lua_State* L, int index) {
    return check_box<SourceBox>(L, index, kSourceType, "data source");
}

// What a reader of a file or a folder answers for a path that is neither.
constexpr const char* kNoFileOrFolder = "no such file or directory";

Loader& check_loader(lua_State* L, int index) {
    return *check_box<LoaderBox>(L, index, kLoaderType, "loader");
}

// T.data.lmdb(path [, {classes = 0}]) -> source | nil, message. The sources' options are
// data/source_schema.h's, checked in one loop by OptionTable (as the loader's) before the path
// is looked at: "T.data.lmdb: option 'classes' must be a non-negative integer (...), got 1.5".
int data_lmdb(lua_State* L) {
    const std::string path = check_string(L, 1);
    const OptionTable options(L, 2, lmdb_option_schema());
    if (push_missing(L, path, kNoFileOrFolder)) return 2;
    push_box<SourceBox>(L, kSourceType,
                        std::make_shared<LmdbSource>(path, options.integer("classes")));
    return 1;
}

// T.data.folder(path) -> source | nil, message
int data_folder(lua_State* L) {
    const std::string path = check_string(L, 1);
    const OptionTable none(L, 2, folder_option_schema());  // "it takes no options"
    if (push_missing(L, path, kNoFileOrFolder)) return 2;
    push_box<SourceBox>(L, kSourceType, folder_source(path));
    return 1;
}

// T.data.list(file [, {root = <the file's folder>, classes = 0}]) -> source | nil, message
int data_list(lua_State* L) {
    const std::string path = check_string(L, 1);
    const OptionTable options(L, 2, list_option_schema());
    if (push_missing(L, path, kNoFileOrFolder)) return 2;
    // The root's default, "" to list_source, is the list file's folder.
    push_box<SourceBox>(L, kSourceType,
                        list_source(path, options.text("root"), options.integer("classes")));
    return 1;
}

std::int64_t check_sample(lua_State* L, int index, const DataSource& s) {
    return check_int_in(L, index, 1, s.size(), "sample") - 1;
}

int source_size(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_source(L, 1)->size()));
    return 1;
}

int source_classes(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_source(L, 1)->classes()));
    return 1;
}

int source_class_names(lua_State* L) {
    const auto names = check_source(L, 1)->class_names();
    lua_createtable(L, static_cast<int>(names.size()), 0);
    for (std::size_t i = 0; i < names.size(); ++i) {
        lua_pushstring(L, names[i].c_str());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

int source_label(lua_State* L) {
    const DataSource& s = *check_source(L, 1);
    lua_pushnumber(L, s.label(check_sample(L, 2, s)));
    return 1;
}

int source_key(lua_State* L) {
    const DataSource& s = *check_source(L, 1);
    lua_pushstring(L, s.key(check_sample(L, 2, s)).c_str());
    return 1;
}

int source_tostring(lua_State* L) {
    auto* box = static_cast<Box<SourceBox>*>(luaL_testudata(L, 1, kSourceType));
    if (box == nullptr) throw ArgError(1, "tandem.Source expected, got " + type_name(L, 1));
    lua_pushstring(
        L, box->value ? ("Source(" + (*box->value)->description() + ")").c_str() : "Source(freed)");
    return 1;
}

// The transforms table at `index` (nil: none), through data/pipeline_schema.h's schema.
TransformOptions read_transforms(lua_State* L, int index) {
    const OptionTable given(L, index, loader_transform_option_schema(), "transforms.");
    TransformOptions t;
    t.channels = static_cast<int>(given.integer("channels"));
    t.resize = static_cast<int>(given.integer("resize"));
    const std::vector<double> crop = given.numbers("crop");  // one size for both, or the pair
    t.crop_height = static_cast<int>(crop.front());
    t.crop_width = static_cast<int>(crop.back());
    t.random_crop = given.flag("random_crop");
    t.pad = static_cast<int>(given.integer("pad"));
    t.fill = static_cast<int>(given.integer("fill"));
    t.flip = given.flag("flip");
    t.brightness = static_cast<float>(given.number("brightness"));
    t.contrast = static_cast<float>(given.number("contrast"));
    t.saturation = static_cast<float>(given.number("saturation"));
    const auto floats = [](const std::vector<double>& values) {
        return std::vector<float>(values.begin(), values.end());
    };
    t.mean = floats(given.numbers("mean"));
    t.std = floats(given.numbers("std"));
    return t;
}

// T.data.Loader{source =, batch =, transforms =, threads =, shard =, last =, device =, layout =,
//               seed =, shuffle =, strict =, prefetch =, quiet =} -> loader: the options and
// their defaults are data/pipeline_schema.h's, checked in one loop by OptionTable.
int data_loader(lua_State* L) {
    if (!lua_istable(L, 1)) throw ArgError(1, "options table expected, got " + type_name(L, 1));
    const OptionTable options(L, 1, loader_option_schema());
    constexpr const char* kLoader = "T.data.Loader";
    // The schema checked the objects' types; what is left is a freed one (its __gc called by hand).
    const auto object = [&](const char* name, auto check) {
        options.push(name);
        try {
            auto value = check(L, lua_gettop(L));
            lua_pop(L, 1);
            return value;
        } catch (const ArgError& e) {  // "device was freed"
            throw ConfigError(std::string(kLoader) + ": option '" + name + "': " + e.what());
        }
    };
    SourceBox source = object("source", check_source);
    LoaderOptions o;
    o.batch = options.integer("batch");
    o.threads = static_cast<int>(options.integer("threads"));
    options.push("transforms");
    o.transform = read_transforms(L, lua_gettop(L));
    lua_pop(L, 1);
    options.push("shard");
    const OptionTable shard(L, lua_gettop(L), loader_shard_option_schema(), "shard.");
    // Shards count from 1 here, as Lua does (the core's are 0-based).
    const std::int64_t count = shard.integer("count"), index = shard.integer("index");
    o.shard_count = static_cast<int>(count);
    o.shard_index = static_cast<int>(index) - 1;
    lua_pop(L, 1);
    o.last = parse_last_batch(options.text("last"));
    o.layout = parse_layout(options.text("layout"));
    if (options.given("device")) o.device = object("device", check_device);
    o.seed = static_cast<std::uint64_t>(options.integer("seed"));
    o.shuffle = options.flag("shuffle");
    o.strict = options.flag("strict");
    o.prefetch = static_cast<int>(options.integer("prefetch"));
    o.quiet = options.flag("quiet");
    std::shared_ptr<Loader> loader;
    try {
        loader = std::make_shared<Loader>(std::move(source), std::move(o));
    } catch (const ConfigError& e) {  // the transforms' checks: "transform option std must be > 0"
        throw ConfigError(std::string(kLoader) + ": " + e.what());
    }
    push_box<LoaderBox>(L, kLoaderType, std::move(loader));
    return 1;
}

// loader:start(epoch): begins an epoch (ending an unfinished one).
int loader_start(lua_State* L) {
    Loader& loader = check_loader(L, 1);
    loader.start_epoch(check_int(L, 2));
    return 0;
}

// loader:next() -> images, labels, count | nil at the end of the epoch
int loader_next(lua_State* L) {
    Loader& loader = check_loader(L, 1);
    std::optional<Batch> batch = loader.next();
    if (!batch) {
        lua_pushnil(L);
        return 1;
    }
    push_tensor(L, std::move(batch->images));
    push_tensor(L, std::move(batch->labels));
    lua_pushnumber(L, static_cast<lua_Number>(batch->count));
    return 3;
}

// loader:batches(epoch) -> iterator for `for images, labels, count in ...`
int loader_batches(lua_State* L) {
    Loader& loader = check_loader(L, 1);
    loader.start_epoch(check_int(L, 2));
    lua_pushcfunction(L, wrap<loader_next>);
    lua_pushvalue(L, 1);
    return 2;
}

int loader_close(lua_State* L) {
    check_loader(L, 1).close();
    return 0;
}

int loader_size(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_loader(L, 1).shard_size()));
    return 1;
}

int loader_batches_per_epoch(lua_State* L) {
    std::optional<std::int64_t> epoch;
    if (!lua_isnoneornil(L, 2))
        epoch = check_int_in(L, 2, -(std::int64_t(1) << 53), std::int64_t(1) << 53, "epoch");
    lua_pushnumber(L, static_cast<lua_Number>(check_loader(L, 1).batches_per_epoch(epoch)));
    return 1;
}

// loader:stats() -> {batches, wait_seconds, warm_wait_seconds, warm_seconds, wait_fraction,
//   records_read, read_rate, images_decoded, decode_rate, decode_threads, batches_assembled,
//   assemble_rate, skipped (each time a corrupt sample is met), corrupt (distinct ones)}
int loader_stats(lua_State* L) {
    const LoaderStats s = check_loader(L, 1).stats();
    lua_createtable(L, 0, 13);
    set_number(L, "batches", double(s.batches));
    set_number(L, "wait_seconds", s.wait_seconds);
    set_number(L, "warm_wait_seconds", s.warm_wait_seconds);
    set_number(L, "warm_seconds", s.warm_seconds);
    set_number(L, "wait_fraction", s.wait_fraction());
    set_number(L, "records_read", double(s.records_read));
    set_number(L, "read_rate", s.read_rate());
    set_number(L, "images_decoded", double(s.images_decoded));
    set_number(L, "decode_rate", s.decode_rate());
    set_number(L, "decode_threads", s.decode_threads);
    set_number(L, "batches_assembled", double(s.batches_assembled));
    set_number(L, "assemble_rate", s.assemble_rate());
    set_number(L, "skipped", double(s.skipped));
    set_number(L, "corrupt", double(s.corrupt));
    return 1;
}

int loader_source(lua_State* L) {
    auto& box = check_box<LoaderBox>(L, 1, kLoaderType, "loader");
    // The loader shares its source; a new handle to the same one.
    push_box<SourceBox>(L, kSourceType, SourceBox(box, &box->source()));
    return 1;
}

int loader_tostring(lua_State* L) {
    auto* box = static_cast<Box<LoaderBox>*>(luaL_testudata(L, 1, kLoaderType));
    if (box == nullptr) throw ArgError(1, "tandem.Loader expected, got " + type_name(L, 1));
    std::string text = "Loader(freed)";
    if (box->value) {
        const Loader& l = **box->value;
        text = "Loader(" + l.source().description() + ", batch " +
               std::to_string(l.options().batch) + ", " + std::to_string(l.options().threads) +
               " threads";
        if (l.options().shard_count > 1)
            text += ", shard " + std::to_string(l.options().shard_index + 1) + "/" +
                    std::to_string(l.options().shard_count);
        text += ")";
    }
    lua_pushstring(L, text.c_str());
    return 1;
}

const luaL_Reg kSourceMethods[] = {
    {"size", wrap<source_size>},
    {"classes", wrap<source_classes>},
    {"class_names", wrap<source_class_names>},
    {"label", wrap<source_label>},
    {"key", wrap<source_key>},
    {nullptr, nullptr},
};

const luaL_Reg kLoaderMethods[] = {
    {"batches", wrap<loader_batches>},
    {"start", wrap<loader_start>},
    {"next", wrap<loader_next>},
    {"close", wrap<loader_close>},
    {"stats", wrap<loader_stats>},
    {"size", wrap<loader_size>},
    {"batches_per_epoch", wrap<loader_batches_per_epoch>},
    {"source", wrap<loader_source>},
    {nullptr, nullptr},
};

const luaL_Reg kLoaderFunctions[] = {
    {"lmdb", wrap<data_lmdb>}, {"folder", wrap<data_folder>},
    {"list", wrap<data_list>}, {"Loader", wrap<data_loader>},
    {nullptr, nullptr},
};

}  // namespace

void register_loader(lua_State* L, int module) {
    define_type(L, module,
                {kSourceType, wrap<release_box<SourceBox, kSourceType>>, kSourceMethods,
                 wrap<source_tostring>});
    define_type(L, module,
                {kLoaderType, wrap<release_box<LoaderBox, kLoaderType>>, kLoaderMethods,
                 wrap<loader_tostring>});
    add_functions(L, module, kLoaderFunctions, "data");
}

}  // namespace tandem::lua
