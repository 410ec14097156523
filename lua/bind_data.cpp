// T.data: idx files, in-memory data sets (tandem.Dataset) and epoch orders (core/data/).
//
// Sample indices are 1-based on the Lua side, as Lua lists are: T.data.epoch_order returns
// 1..n shuffled, and dataset:batch takes such indices. Labels are the class numbers stored in
// the files (0-based), as the loss expects.
//
// Return conventions: a missing file gives nil, message (T.data.idx, T.data.mnist); bad
// arguments, and files that exist but are malformed, raise.
#include <filesystem>
#include <vector>

#include "binding.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/interactions.h"
#include "data/source_schema.h"
#include "objects.h"
#include "option_table.h"
#include "wrap.h"

namespace tandem::lua {

std::shared_ptr<InMemoryDataset>& check_dataset(lua_State* L, int index) {
    return check_box<std::shared_ptr<InMemoryDataset>>(L, index, kDatasetType, "dataset");
}

namespace {

using DatasetPtr = std::shared_ptr<InMemoryDataset>;

// T.data.idx(path) -> tensor (the bytes as f32 values 0..255, in the file's shape)
int data_idx(lua_State* L) {
    const std::string path = check_string(L, 1);
    if (push_missing(L, path)) return 2;
    const IdxArray array = read_idx(path);
    const std::vector<float> values(array.bytes.begin(), array.bytes.end());
    push_tensor(L, Tensor::from_vector(Shape(array.dims), host_device(), values));
    return 1;
}

// T.data.mnist(images_path, labels_path [, {mean = 0, std = 1}]) -> dataset
int data_mnist(lua_State* L) {
    const std::string images = check_string(L, 1);
    const std::string labels = check_string(L, 2);
    const OptionTable options(L, 3, mnist_option_schema());
    const auto mean = static_cast<float>(options.number("mean"));
    const auto std = static_cast<float>(options.number("std"));
    if (push_missing(L, images) || push_missing(L, labels)) return 2;
    push_box(
        L, kDatasetType,
        std::make_shared<InMemoryDataset>(InMemoryDataset::from_idx(images, labels, mean, std)));
    return 1;
}

// T.data.dataset(images, targets) -> dataset, from host tensors: images f32 N x C x H x W,
// targets i32 N class labels or f32 N x ... values.
int data_dataset(lua_State* L) {
    const Tensor& images = check_tensor(L, 1);
    const Tensor& labels = check_tensor(L, 2);
    push_box(L, kDatasetType, std::make_shared<InMemoryDataset>(images.clone(), labels.clone()));
    return 1;
}

// The options {length = 0, features = 0} at argument 2, through `schema` (data/source_schema.h:
// T.data.interactions' or T.data.interactions_info's).
InteractionShape interaction_shape_options(lua_State* L, const OptionSchema& schema) {
    const OptionTable options(L, 2, schema);
    InteractionShape shape;
    shape.length = options.integer("length");
    shape.features = options.integer("features");
    return shape;
}

void push_interaction_info(lua_State* L, const InteractionInfo& info) {
    lua_createtable(L, 0, 5);
    const std::pair<const char*, std::int64_t> fields[] = {{"length", info.length},
                                                           {"features", info.features},
                                                           {"items", info.items},
                                                           {"classes", info.classes},
                                                           {"size", info.size}};
    for (const auto& [key, value] : fields) {
        lua_pushnumber(L, static_cast<lua_Number>(value));
        lua_setfield(L, -2, key);
    }
}

// T.data.interactions(path [, {length = 0, features = 0}]) -> dataset, {length =, features =,
// items =, classes =, size =}: users' interaction data (a text file or the LMDB database
// `tandem import-interactions` wrote; docs/data-format.md) as a dataset of f32 samples
// 1 x 1 x (length + features), the item ids (shifted by 1, 0 padding) then the features. The
// table says the shape, and `items` the rows an nn.Embedding over the ids needs.
int data_interactions(lua_State* L) {
    const std::string path = check_string(L, 1);
    const InteractionShape shape = interaction_shape_options(L, interactions_option_schema());
    if (push_missing(L, path)) return 2;
    InteractionSet set = read_interactions(path, shape);
    const std::int64_t n = set.size();
    Tensor x = Tensor::from_vector(Shape({n, 1, 1, set.width()}), host_device(), set.samples);
    Tensor y = Tensor::empty({n}, host_device(), DType::i32);
    std::copy(set.labels.begin(), set.labels.end(), y.data<int>());
    push_box(L, kDatasetType, std::make_shared<InMemoryDataset>(std::move(x), std::move(y)));
    push_interaction_info(L, {set.length, set.features, set.items, set.classes, n});
    return 2;
}

// T.data.interactions_info(path [, {length = 0, features = 0}]) -> {length =, features =,
// items =, classes =, size =} | nil, message: T.data.interactions' table without its data set,
// for a recipe that streams the database with T.data.Loader (one pass, keeping no sample).
int data_interactions_info(lua_State* L) {
    const std::string path = check_string(L, 1);
    const InteractionShape shape = interaction_shape_options(L, interactions_info_option_schema());
    if (push_missing(L, path)) return 2;
    push_interaction_info(L, interaction_info(path, shape));
    return 1;
}

// T.data.epoch_order(n, seed, epoch [, shuffle = true]) -> {i1, i2, ..., in} (1-based)
int data_epoch_order(lua_State* L) {
    const std::int64_t n = check_int_in(L, 1, 0, std::int64_t(1) << 26, "n");
    const auto seed = static_cast<std::uint64_t>(check_int(L, 2));
    const std::int64_t epoch = check_int(L, 3);
    const bool shuffle = opt_bool(L, 4, true);
    const std::vector<std::int64_t> order = epoch_order(n, seed, epoch, shuffle);
    lua_createtable(L, static_cast<int>(order.size()), 0);
    for (std::size_t i = 0; i < order.size(); ++i) {
        lua_pushnumber(L, static_cast<lua_Number>(order[i] + 1));
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

int dataset_size(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_dataset(L, 1)->size()));
    return 1;
}

int dataset_classes(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_dataset(L, 1)->classes()));
    return 1;
}

int dataset_sample_shape(lua_State* L) {
    push_shape(L, check_dataset(L, 1)->sample_shape());
    return 1;
}

// The augmentation table {flip = bool, crop_pad = n, fill = x} at `index`, through its schema
// (data/source_schema.h); augment_batch checks crop_pad against the images' sides.
AugmentOptions check_augment(lua_State* L, int index) {
    const OptionTable options(L, index, augment_option_schema());
    AugmentOptions o;
    o.flip = options.flag("flip");
    o.crop_pad = options.integer("crop_pad");
    o.fill = static_cast<float>(options.number("fill"));
    return o;
}

// dataset:batch(indices [, first = 1, count = #indices - first + 1 [, augment, seed, epoch]])
//   -> images (f32 B x C x H x W, host), targets (i32 B or f32 B x ..., host)
// Takes indices[first .. first + count - 1] (1-based sample numbers, as epoch_order gives).
// With `augment` ({flip =, crop_pad =, fill =}), the random choices come from (seed, epoch,
// sample), so a batch is the same however and whenever it is drawn.
int dataset_batch(lua_State* L) {
    const InMemoryDataset& ds = *check_dataset(L, 1);
    if (!lua_istable(L, 2))
        throw ArgError(2, "list of sample indices expected, got " + type_name(L, 2));
    const auto length = static_cast<std::int64_t>(lua_objlen(L, 2));
    const std::int64_t first =
        lua_isnoneornil(L, 3) ? 1 : check_int_in(L, 3, 1, length + 1, "first");
    const std::int64_t count = lua_isnoneornil(L, 4)
                                   ? length - first + 1
                                   : check_int_in(L, 4, 0, length - first + 1, "count");
    const bool augment = !lua_isnoneornil(L, 5);
    const AugmentOptions options = augment ? check_augment(L, 5) : AugmentOptions{};
    const auto seed = static_cast<std::uint64_t>(opt_int(L, 6, 0));
    const std::int64_t epoch = opt_int(L, 7, 0);

    std::vector<std::int64_t> ids;
    for (std::int64_t i = first; i < first + count; ++i) {
        lua_rawgeti(L, 2, static_cast<int>(i));
        const bool ok = lua_type(L, -1) == LUA_TNUMBER;
        const double v = ok ? lua_tonumber(L, -1) : 0;
        lua_pop(L, 1);
        if (!ok || v != static_cast<double>(static_cast<std::int64_t>(v)) || v < 1 ||
            v > static_cast<double>(ds.size()))
            throw ArgError(2, "entry " + std::to_string(i) + " is not a sample index in [1, " +
                                  std::to_string(ds.size()) + "]");
        ids.push_back(static_cast<std::int64_t>(v) - 1);
    }
    auto [images, labels] = ds.gather(ids, host_device(), Layout::contiguous);
    if (augment) augment_batch(images, ids, options, seed, epoch);
    push_tensor(L, std::move(images));
    push_tensor(L, std::move(labels));
    return 2;
}

int dataset_tostring(lua_State* L) {
    auto* box = static_cast<Box<DatasetPtr>*>(luaL_testudata(L, 1, kDatasetType));
    if (box == nullptr) throw ArgError(1, "tandem.Dataset expected, got " + type_name(L, 1));
    std::string text = "Dataset(freed)";
    if (box->value) {
        const InMemoryDataset& ds = **box->value;
        text = "Dataset(" + std::to_string(ds.size()) + " samples of " +
               ds.sample_shape().to_string() + ", " + std::to_string(ds.classes()) + " classes)";
    }
    lua_pushstring(L, text.c_str());
    return 1;
}

const luaL_Reg kDataMethods[] = {
    {"size", wrap<dataset_size>},
    {"classes", wrap<dataset_classes>},
    {"sample_shape", wrap<dataset_sample_shape>},
    {"batch", wrap<dataset_batch>},
    {nullptr, nullptr},
};

const luaL_Reg kDataFunctions[] = {
    {"idx", wrap<data_idx>},
    {"mnist", wrap<data_mnist>},
    {"dataset", wrap<data_dataset>},
    {"interactions", wrap<data_interactions>},
    {"interactions_info", wrap<data_interactions_info>},
    {"epoch_order", wrap<data_epoch_order>},
    {nullptr, nullptr},
};

}  // namespace

void register_data(lua_State* L, int module) {
    define_type(L, module,
                {kDatasetType, wrap<release_box<DatasetPtr, kDatasetType>>, kDataMethods,
                 wrap<dataset_tostring>});
    add_functions(L, module, kDataFunctions, "data");
}

}  // namespace tandem::lua
