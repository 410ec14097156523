#include <gtest/gtest.h>

#include <cstring>

#include "base/json.h"
#include "io/safetensors.h"
#include "support/grad_check.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

// A safetensors file from its header text and data bytes, as any writer would lay it out.
std::string make_file(const std::string& header, const std::string& data) {
    std::string file(8, '\0');
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) file[std::size_t(i)] = char((n >> (8 * i)) & 0xFF);
    return file + header + data;
}

std::string floats(std::initializer_list<float> values) {
    std::string out(values.size() * 4, '\0');
    std::memcpy(out.data(), std::data(values), out.size());
    return out;
}

Tensor int_tensor(const Shape& shape, std::vector<int> values) {
    Tensor t = Tensor::empty(shape, test_device(), DType::i32);
    std::memcpy(t.data<int>(), values.data(), values.size() * sizeof(int));
    return t;
}

Tensor byte_tensor(const Shape& shape, std::vector<unsigned char> values) {
    Tensor t = Tensor::empty(shape, test_device(), DType::u8);
    std::memcpy(t.data<unsigned char>(), values.data(), values.size());
    return t;
}

const Tensor& find(const SafetensorsContents& c, const std::string& name) {
    for (const auto& [n, t] : c.tensors)
        if (n == name) return t;
    throw std::runtime_error("no tensor " + name);
}

// Loading `path` must fail with a DataError whose message names the file and contains `what`.
void expect_load_error(const std::string& path, const std::string& what) {
    try {
        load_safetensors(path, test_device());
        FAIL() << "loaded a defective file; expected an error about: " << what;
    } catch (const DataError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(path), std::string::npos) << message;
        EXPECT_NE(message.find(what), std::string::npos) << message;
    }
}

TEST(Safetensors, RoundTripsTypesLayoutsAndMetadata) {
    TempDir dir;
    const std::string path = dir.file("model.safetensors");
    std::vector<float> image(2 * 3 * 4 * 5);
    for (std::size_t i = 0; i < image.size(); ++i) image[i] = float(i) * 0.5f - 7.f;
    const Tensor nhwc =
        Tensor::from_vector({2, 3, 4, 5}, test_device(), image, Layout::channels_last);
    const NamedTensors tensors = {
        {"conv.weight", nhwc},
        {"fc.bias", Tensor::from_vector({3}, test_device(), std::vector<float>{1.5f, -2.f, 3.f})},
        {"step", int_tensor({1}, {1234567})},
        {"labels", int_tensor({2, 2}, {-1, 0, 7, 2147483647})},
        {"mask", byte_tensor({5}, {0, 1, 2, 254, 255})},
        {"empty", Tensor::zeros({0, 4}, test_device())},
        {"scalar", Tensor::from_vector({}, test_device(), std::vector<float>{42.f})},
    };
    const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                         {"recipe", "a \"quoted\"\nline"}};
    save_safetensors(path, tensors, metadata);

    const auto back = load_safetensors(path, test_device());
    EXPECT_EQ(back.metadata, metadata);
    ASSERT_EQ(back.tensors.size(), tensors.size());
    for (std::size_t i = 1; i < back.tensors.size(); ++i)
        EXPECT_LT(back.tensors[i - 1].first, back.tensors[i].first);  // sorted by name

    const Tensor& w = find(back, "conv.weight");
    EXPECT_EQ(w.shape(), (Shape{2, 3, 4, 5}));
    EXPECT_EQ(w.layout(), Layout::contiguous);
    EXPECT_EQ(w.to_vector(), image);  // logical order, whatever the layout saved
    EXPECT_EQ(find(back, "fc.bias").to_vector(), (std::vector<float>{1.5f, -2.f, 3.f}));
    const Tensor& labels = find(back, "labels");
    ASSERT_EQ(labels.dtype(), DType::i32);
    EXPECT_EQ(std::vector<int>(labels.data<int>(), labels.data<int>() + 4),
              (std::vector<int>{-1, 0, 7, 2147483647}));
    EXPECT_EQ(find(back, "step").data<int>()[0], 1234567);
    const Tensor& mask = find(back, "mask");
    ASSERT_EQ(mask.dtype(), DType::u8);
    EXPECT_EQ(
        std::vector<unsigned char>(mask.data<unsigned char>(), mask.data<unsigned char>() + 5),
        (std::vector<unsigned char>{0, 1, 2, 254, 255}));
    EXPECT_EQ(find(back, "empty").shape(), (Shape{0, 4}));
    EXPECT_EQ(find(back, "scalar").shape(), Shape{});
    EXPECT_EQ(find(back, "scalar").to_vector(), std::vector<float>{42.f});
}

// The bytes on disk follow the format: little-endian length, a header padded to 8 bytes whose
// tensors are sorted by name with back-to-back offsets, then the data in that order.
TEST(Safetensors, FileLayoutFollowsTheFormat) {
    TempDir dir;
    const std::string path = dir.file("t.safetensors");
    save_safetensors(path,
                     {{"b", Tensor::from_vector({2}, test_device(), std::vector<float>{3.f, 4.f})},
                      {"a", Tensor::from_vector({1}, test_device(), std::vector<float>{1.f})}});
    const std::string file = read_bytes(path);
    std::uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);
    EXPECT_EQ(n % 8, 0u);
    const std::string header = file.substr(8, n);
    EXPECT_EQ(header.find("__metadata__"), std::string::npos);
    const JsonValue h = parse_json(header);
    ASSERT_EQ(h.object.size(), 2u);
    EXPECT_EQ(h.object[0].key, "a");
    EXPECT_EQ(h.object[0].value.object[0].value.string, "F32");
    EXPECT_EQ(h.object[0].value.object[2].value.array[1].integer, 4);
    EXPECT_EQ(h.object[1].key, "b");
    EXPECT_EQ(h.object[1].value.object[2].value.array[0].integer, 4);
    EXPECT_EQ(h.object[1].value.object[2].value.array[1].integer, 12);
    EXPECT_EQ(file.substr(8 + n), floats({1.f, 3.f, 4.f}));
}

// A file as the reference implementation writes it (metadata first, extra spaces) loads.
TEST(Safetensors, ReadsAForeignFile) {
    TempDir dir;
    const std::string path = dir.file("foreign.safetensors");
    write_bytes(path, make_file(R"({"__metadata__":{"format":"pt"},)"
                                R"("w":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
                                R"("ids":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}   )",
                                floats({0.5f, -1.f}) + std::string("\x01\x02\x03", 3)));
    const auto c = load_safetensors(path, test_device());
    EXPECT_EQ(c.metadata.at("format"), "pt");
    EXPECT_EQ(find(c, "w").shape(), (Shape{2, 1}));
    EXPECT_EQ(find(c, "w").to_vector(), (std::vector<float>{0.5f, -1.f}));
    EXPECT_EQ(find(c, "ids").data<unsigned char>()[2], 3);
}

TEST(Safetensors, DefectiveFilesAreDataErrorsNamingTheFile) {
    TempDir dir;
    const std::string entry = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    const std::string data = floats({1.f, 2.f});
    auto write = [&](const std::string& name, const std::string& bytes) {
        const std::string path = dir.file(name);
        write_bytes(path, bytes);
        return path;
    };

    expect_load_error(dir.file("missing.safetensors"), "No such file");
    expect_load_error(write("short", "abc"), "too short");
    const std::string whole = make_file(entry, data);
    expect_load_error(write("header_cut", whole.substr(0, 20)), "runs past the end");
    expect_load_error(write("data_cut", whole.substr(0, whole.size() - 3)),
                      "is truncated: header promises 8 data bytes, file has 5");
    expect_load_error(write("surplus", whole + "xx"), "accounts for only 8");
    expect_load_error(write("garbage", make_file(R"({"w":{"dtype":"F32",,}})", data)),
                      "malformed JSON header at byte 20");
    expect_load_error(write("not_json", make_file("\x01\x02 binary", data)), "malformed JSON");
    expect_load_error(write("array", make_file("[1, 2]", data)), "not an object");
    expect_load_error(
        write("dtype",
              make_file(R"({"w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", data)),
        "dtype 'F16'");
    expect_load_error(
        write("size", make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data)),
        "needs 12 bytes");
    expect_load_error(
        write("order",
              make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data)),
        "out of order");
    expect_load_error(
        write("gap", make_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data)),
        "leave a gap");
    expect_load_error(
        write("overlap", make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   data)),
        "overlap");
    expect_load_error(
        write("beyond", make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("v":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                  data)),
        "header promises 12 data bytes, file has 8");
    expect_load_error(
        write("negative",
              make_file(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data)),
        "shape entries");
    expect_load_error(write("field", make_file(R"({"w":{"dtype":"F32","shape":[2]}})", data)),
                      "lacks 'data_offsets'");
    expect_load_error(write("meta", make_file(R"({"__metadata__":{"k":1}})", "")), "not a string");
}

TEST(Safetensors, SaveRejectsBadNames) {
    TempDir dir;
    const Tensor t = Tensor::zeros({2}, test_device());
    EXPECT_THROW(save_safetensors(dir.file("x"), {{"a", t}, {"a", t}}), ConfigError);
    EXPECT_THROW(save_safetensors(dir.file("x"), {{"__metadata__", t}}), ConfigError);
    EXPECT_THROW(save_safetensors(dir.file("x"), {{"a", Tensor()}}), ConfigError);
    EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace tandem::test
