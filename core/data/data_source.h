// DataSource: a labelled set of images, each one record of encoded bytes (issue 3).
//
// Sources hand out bytes, not pixels: decoding and augmenting are the loader's decode threads'
// work, so a source only has to read fast. Labels and keys are known up front (sources read
// them when they open), which lets the loader check labels and tools count classes without
// reading the images. Four sources: LMDB databases in Tandem's record format (lmdb_source.h),
// image folders and list files (file_list_source.h), idx files (idx_source.h).
//
// Reading happens through a SourceReader, one per thread: an LMDB read transaction, an open
// file, a scratch buffer belong to one thread, and the interface says so instead of locking.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/record.h"

namespace tandem {

// An image that cannot be decoded or whose record is damaged. The loader skips and counts these
// (or stops on them with strict = true); every other error stops it.
class CorruptSampleError : public DataError {
    using DataError::DataError;
};

// What a source's samples are: images (decoded and transformed by the loader), or users'
// interaction examples (data/interactions.h), which the loader copies as they are stored.
enum class SampleKind { image, interaction };

// One sample as its source stores it.
struct RawSample {
    std::string key;  // LMDB key or file path: what messages name
    // the database a record is in, for messages ('' for a file: its key is its path)
    std::string origin;
    std::int32_t label = 0;
    // raw, png, jpeg, interaction, or other (a file in any format)
    Encoding encoding = Encoding::raw;
    // The stored shape; 0 when the source does not know it before decoding (image files).
    std::uint32_t height = 0, width = 0, channels = 0;
    std::string bytes;  // the encoded image, or raw H x W x C RGB bytes
};

class SourceReader {
public:
    virtual ~SourceReader() = default;
    // Sample `index` (0 <= index < size()). CorruptSampleError when its bytes are damaged
    // (a bad record header, a truncated record); DataError when it cannot be read at all
    // (a file gone since the source was opened).
    virtual RawSample read(std::int64_t index) = 0;
};

class DataSource {
public:
    virtual ~DataSource() = default;

    virtual std::int64_t size() const = 0;
    // The class numbers run 0 .. classes() - 1.
    virtual std::int64_t classes() const = 0;
    // Class names by number where the source has them (a folder's sub-folders), else empty.
    virtual std::vector<std::string> class_names() const { return {}; }
    // The sample's class; CorruptSampleError naming the key when the source knows the sample
    // is damaged (an LMDB record whose header cannot be read).
    virtual std::int32_t label(std::int64_t index) const = 0;
    virtual std::string key(std::int64_t index) const = 0;
    // "LMDB train_db (60000 records, 10 classes)": for messages and __tostring.
    virtual std::string description() const = 0;
    // Images unless the source holds interaction records (only an LMDB database can).
    virtual SampleKind sample_kind() const { return SampleKind::image; }

    // A reader for the calling thread; each thread that reads opens its own.
    virtual std::unique_ptr<SourceReader> open_reader() const = 0;
};

using DataSourcePtr = std::shared_ptr<const DataSource>;

// png, jpeg or other from a file's first bytes.
Encoding sniff_encoding(const std::string& bytes);

}  // namespace tandem
