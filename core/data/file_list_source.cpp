#include "data/file_list_source.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace tandem {

class FileListSource::Reader final : public SourceReader {
public:
    explicit Reader(const FileListSource& source) : source_(source) {}
    RawSample read(std::int64_t index) override {
        const Entry& e = source_.entries_.at(static_cast<std::size_t>(index));
        std::ifstream in(e.path, std::ios::binary);
        TANDEM_CHECK_AS(DataError, in.good())
            << "cannot open image " << e.path << ": " << std::strerror(errno);
        RawSample s;
        s.key = e.path;
        s.label = e.label;
        s.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        TANDEM_CHECK_AS(DataError, !in.bad()) << "cannot read image " << e.path;
        s.encoding = sniff_encoding(s.bytes);
        return s;
    }

private:
    const FileListSource& source_;
};

FileListSource::FileListSource(std::vector<Entry> entries, std::int64_t classes,
                               std::vector<std::string> class_names, std::string what)
    : entries_(std::move(entries)), classes_(classes), class_names_(std::move(class_names)),
      what_(std::move(what)) {
    TANDEM_CHECK_AS(DataError, !entries_.empty()) << what_ << " holds no images";
    for (const Entry& e : entries_)
        TANDEM_CHECK_AS(DataError, e.label >= 0 && e.label < classes_)
            << what_ << ": " << e.path << " has label " << e.label << ", out of range for "
            << classes_ << " classes";
}

std::int32_t FileListSource::label(std::int64_t index) const {
    return entries_.at(static_cast<std::size_t>(index)).label;
}

std::string FileListSource::key(std::int64_t index) const {
    return entries_.at(static_cast<std::size_t>(index)).path;
}

std::string FileListSource::description() const {
    return what_ + " (" + std::to_string(size()) + " images, " + std::to_string(classes_) +
           " classes)";
}

std::unique_ptr<SourceReader> FileListSource::open_reader() const {
    return std::make_unique<Reader>(*this);
}

bool is_image_file(const std::string& name) {
    std::string ext = std::filesystem::path(name).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    static const char* const kKnown[] = {".jpg", ".jpeg", ".png", ".bmp",  ".ppm", ".pgm",
                                         ".pbm", ".pnm",  ".tif", ".tiff", ".webp"};
    return std::any_of(std::begin(kKnown), std::end(kKnown),
                       [&](const char* k) { return ext == k; });
}

std::shared_ptr<FileListSource> folder_source(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code error;
    TANDEM_CHECK_AS(DataError, fs::is_directory(dir, error))
        << "image folder " << dir << ": "
        << (fs::exists(dir, error) ? "not a directory" : "no such directory");
    std::vector<std::string> classes;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_directory()) classes.push_back(e.path().filename().string());
    std::sort(classes.begin(), classes.end());
    TANDEM_CHECK_AS(DataError, !classes.empty())
        << "image folder " << dir << " has no class sub-folders (expected " << dir
        << "/<class>/<image>)";
    std::vector<FileListSource::Entry> entries;
    for (std::size_t c = 0; c < classes.size(); ++c) {
        std::vector<std::string> files;
        for (const auto& e : fs::recursive_directory_iterator(fs::path(dir) / classes[c]))
            if (e.is_regular_file() && is_image_file(e.path().string()))
                files.push_back(e.path().string());
        std::sort(files.begin(), files.end());
        for (auto& f : files) entries.push_back({std::move(f), static_cast<std::int32_t>(c)});
    }
    return std::make_shared<FileListSource>(std::move(entries),
                                            static_cast<std::int64_t>(classes.size()),
                                            std::move(classes), "image folder " + dir);
}

std::shared_ptr<FileListSource> list_source(const std::string& list_file, const std::string& root,
                                            std::int64_t classes) {
    namespace fs = std::filesystem;
    TANDEM_CHECK_AS(ConfigError, classes >= 0) << "classes must be >= 0, got " << classes;
    std::ifstream in(list_file);
    TANDEM_CHECK_AS(DataError, in.good())
        << "cannot open list file " << list_file << ": " << std::strerror(errno);
    const fs::path base = root.empty() ? fs::path(list_file).parent_path() : fs::path(root);
    std::vector<FileListSource::Entry> entries;
    std::int64_t largest = -1;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
            line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        const auto space = line.find_last_of(" \t");
        TANDEM_CHECK_AS(DataError, space != std::string::npos && space > 0)
            << list_file << ":" << number << ": expected 'path label', got '" << line << "'";
        const std::string label_text = line.substr(space + 1);
        std::string path = line.substr(0, line.find_last_not_of(" \t", space) + 1);
        char* end = nullptr;
        errno = 0;
        const long long label = std::strtoll(label_text.c_str(), &end, 10);
        TANDEM_CHECK_AS(DataError, *end == '\0' && errno == 0 && label >= 0 && label < (1LL << 31))
            << list_file << ":" << number << ": label '" << label_text
            << "' is not a non-negative integer";
        if (fs::path(path).is_relative()) path = (base / path).string();
        std::error_code error;
        TANDEM_CHECK_AS(DataError, fs::is_regular_file(path, error))
            << list_file << ":" << number << ": no such image file " << path;
        largest = std::max<std::int64_t>(largest, label);
        entries.push_back({std::move(path), static_cast<std::int32_t>(label)});
    }
    return std::make_shared<FileListSource>(std::move(entries), classes > 0 ? classes : largest + 1,
                                            std::vector<std::string>{}, "list file " + list_file);
}

}  // namespace tandem
