// FileListSource: images as files on disk, each with a label. Two ways to build one (issue 3):
//   folder_source(dir)  — one sub-folder per class, classes numbered in sorted name order
//                         (torchvision's ImageFolder); files with image extensions, sorted.
//   list_source(file)   — `path label` lines, as Caffe's convert_imageset reads: the label is
//                         after the last space (paths may hold spaces), paths relative to
//                         `root` (default: the list file's folder).
// Reading a sample reads the whole file; decoding is the loader's job.
#pragma once

#include <string>
#include <vector>

#include "data/data_source.h"

namespace tandem {

class FileListSource final : public DataSource {
public:
    struct Entry {
        std::string path;
        std::int32_t label;
    };
    // DataError for no entries or a label outside [0, classes); `what` names the set in
    // messages ("folder photos/").
    FileListSource(std::vector<Entry> entries, std::int64_t classes,
                   std::vector<std::string> class_names, std::string what);

    std::int64_t size() const override { return static_cast<std::int64_t>(entries_.size()); }
    std::int64_t classes() const override { return classes_; }
    std::vector<std::string> class_names() const override { return class_names_; }
    std::int32_t label(std::int64_t index) const override;
    std::string key(std::int64_t index) const override;
    std::string description() const override;
    std::unique_ptr<SourceReader> open_reader() const override;

private:
    class Reader;
    std::vector<Entry> entries_;
    std::int64_t classes_;
    std::vector<std::string> class_names_;
    std::string what_;
};

// DataError for a missing folder, a folder without class sub-folders, or no images in them.
std::shared_ptr<FileListSource> folder_source(const std::string& dir);

// `classes` > 0 declares the class count (labels at or above it are errors), 0 takes the largest
// label + 1. DataError naming the file and line for a missing file, a line without a label, a
// label that is not a non-negative integer, or no lines at all.
std::shared_ptr<FileListSource> list_source(const std::string& list_file,
                                            const std::string& root = "", std::int64_t classes = 0);

// Whether a file name has an extension OpenCV's imgcodecs reads (case-insensitive).
bool is_image_file(const std::string& name);

}  // namespace tandem
