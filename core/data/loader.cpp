#include "data/loader.h"

#include <chrono>
#include <opencv2/core.hpp>
#include <utility>

#include "base/rng.h"
#include "base/thread_times.h"
#include "data/dataset.h"
#include "data/interactions.h"
#include "device/device.h"
#include "layers/layer.h"

namespace tandem {
namespace {

double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::int64_t nanos_since(double start) {
    return std::int64_t((now_seconds() - start) * 1e9);
}

// Why a record of the other kind than its source's is skipped, named as LmdbSource names a
// damaged record.
std::string out_of_kind(const RawSample& s, bool interactions) {
    const std::string where = (s.origin.empty() ? "" : s.origin + ": ") + "record '" + s.key + "'";
    if (interactions)
        return where + " is a " + std::string(encoding_name(s.encoding)) +
               " image among interaction examples";
    return where + " is an interaction example among images";
}

}  // namespace

struct Loader::Item {
    std::int64_t position = 0;  // in this shard's epoch sequence
    std::int64_t index = 0;     // in the source
    RawSample sample;
    std::string corrupt;  // why the sample cannot be used; empty when it can
};

LastBatch parse_last_batch(const std::string& name) {
    if (name == "drop") return LastBatch::drop;
    if (name == "keep") return LastBatch::keep;
    if (name == "pad") return LastBatch::pad;
    TANDEM_THROW(ConfigError) << "unknown last-batch mode '" << name
                              << "' (known: drop, keep, pad)";
}

Loader::Loader(DataSourcePtr source, LoaderOptions options)
    : source_(std::move(source)), options_(std::move(options)), transform_(options_.transform),
      device_(options_.device ? options_.device.get() : &host_device()),
      interactions_(source_ != nullptr && source_->sample_kind() == SampleKind::interaction) {
    const LoaderOptions& o = options_;
    TANDEM_CHECK_AS(ConfigError, source_ != nullptr) << "a loader needs a data source";
    if (interactions_) {
        const std::string_view option = first_set_transform_option(o.transform);
        TANDEM_CHECK_AS(ConfigError, option.empty())
            << "transforms option '" << option << "' is for images, and " << source_->description()
            << " holds users' interaction examples, which the loader passes on as stored (1 x 1 "
               "x (length + features) samples): leave the transforms out";
    }
    // Upper bounds too: a batch of 10^12 images or 10^9 batches in flight is a typo, refused
    // here rather than as a failed allocation later (issue 19).
    TANDEM_CHECK_AS(ConfigError, o.batch >= 1 && o.batch <= (std::int64_t(1) << 24))
        << "loader batch must be in [1, 16777216], got " << o.batch;
    TANDEM_CHECK_AS(ConfigError, o.threads >= 1 && o.threads <= 256)
        << "loader threads must be in [1, 256], got " << o.threads;
    TANDEM_CHECK_AS(ConfigError,
                    o.shard_count >= 1 && o.shard_index >= 0 && o.shard_index < o.shard_count)
        << "loader shard_index must be in [0, shard_count), got " << o.shard_index
        << " with shard_count " << o.shard_count;
    TANDEM_CHECK_AS(ConfigError, o.prefetch >= 1 && o.prefetch <= 1024)
        << "loader prefetch must be in [1, 1024], got " << o.prefetch;
    TANDEM_CHECK_AS(DataError, source_->size() > 0) << source_->description() << " is empty";
    TANDEM_CHECK_AS(DataError, shard_size() > 0)
        << "shard " << o.shard_index + 1 << " of " << o.shard_count << " of "
        << source_->description() << " is empty (fewer samples than shards)";
    // The decode threads are the parallelism; OpenCV's own pool would oversubscribe the cores
    // and make `threads` mean less than it says.
    cv::setNumThreads(0);
}

Loader::~Loader() {
    close();
}

std::int64_t Loader::shard_size() const {
    const std::int64_t n = source_->size(), k = options_.shard_count, i = options_.shard_index;
    return n / k + (i < n % k ? 1 : 0);
}

std::vector<std::int64_t> Loader::shard_order(std::int64_t epoch) const {
    const std::vector<std::int64_t> all =
        epoch_order(source_->size(), options_.seed, epoch, options_.shuffle);
    std::vector<std::int64_t> order;
    order.reserve(static_cast<std::size_t>(shard_size()));
    for (std::size_t p = std::size_t(options_.shard_index); p < all.size();
         p += std::size_t(options_.shard_count))
        order.push_back(all[p]);
    return order;
}

std::int64_t Loader::batches_per_epoch(std::optional<std::int64_t> epoch) const {
    const std::vector<std::int64_t> order = shard_order(epoch.value_or(epoch_ + 1));
    const std::int64_t n = std::int64_t(order.size()) - corrupt_.count_in(order),
                       b = options_.batch;
    return options_.last == LastBatch::drop ? n / b : (n + b - 1) / b;
}

void Loader::start_epoch(std::int64_t epoch) {
    close();
    std::vector<std::int64_t> order = shard_order(epoch);
    epoch_ = epoch;
    const std::int64_t b = options_.batch;
    chunks_ = (std::int64_t(order.size()) + b - 1) / b;
    const auto t = static_cast<std::size_t>(options_.threads);
    const std::size_t queue = std::size_t(std::min<std::int64_t>(b, 256)) + 2 * t;
    read_queue_ = std::make_unique<BoundedQueue<std::unique_ptr<Item>>>(queue);
    // The reader is never more than a chunk and a queue's worth ahead of the first chunk the
    // assembler has not taken: decode threads that finish a chunk go on with the next one,
    // and the slabs alive besides the batches handed out span at most window_ + batch
    // positions (three batches for large ones).
    window_ = b + std::int64_t(queue + t);
    done_queue_ = std::make_unique<BoundedQueue<SlabPtr>>(std::size_t(window_ / b + 2));
    batch_queue_ = std::make_unique<BoundedQueue<Batch>>(std::size_t(options_.prefetch));
    {
        std::lock_guard lock(window_mutex_);
        stopping_ = false;
        taken_ = 0;
    }
    open_slabs_.clear();
    error_ = nullptr;
    first_batch_ = true;
    decoders_left_ = options_.threads;
    threads_.emplace_back(&Loader::read_stage, this, std::move(order));
    for (int i = 0; i < options_.threads; ++i) threads_.emplace_back(&Loader::decode_stage, this);
    threads_.emplace_back(&Loader::assemble_stage, this);
}

std::optional<Batch> Loader::next() {
    if (!batch_queue_) return std::nullopt;
    const double start = now_seconds();
    std::optional<Batch> batch = batch_queue_->pop();
    const double end = now_seconds();
    if (!batch) {
        join_all();
        batch_queue_.reset();
        std::exception_ptr error;
        {
            std::lock_guard lock(error_mutex_);
            std::swap(error, error_);
        }
        if (error) std::rethrow_exception(error);
        return std::nullopt;
    }
    consumer_.batches += 1;
    consumer_.wait_seconds += end - start;
    if (!first_batch_) {
        consumer_.warm_wait_seconds += end - start;
        consumer_.warm_seconds += end - last_return_;
    }
    first_batch_ = false;
    last_return_ = end;
    return batch;
}

void Loader::close() {
    cancel_all();
    join_all();
    batch_queue_.reset();
    read_queue_.reset();
    done_queue_.reset();
    open_slabs_.clear();
    std::lock_guard lock(error_mutex_);
    error_ = nullptr;
}

void Loader::cancel_all() {
    {
        std::lock_guard lock(window_mutex_);
        stopping_ = true;
    }
    window_cv_.notify_all();
    if (read_queue_) read_queue_->cancel();
    if (done_queue_) done_queue_->cancel();
    if (batch_queue_) batch_queue_->cancel();
}

void Loader::join_all() {
    for (auto& t : threads_) t.join();
    threads_.clear();
}

void Loader::fail(std::exception_ptr error) {
    {
        std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::move(error);
    }
    cancel_all();
}

LoaderStats Loader::stats() const {
    LoaderStats s = consumer_;
    s.records_read = records_read_;
    s.read_seconds = double(read_ns_) * 1e-9;
    s.images_decoded = images_decoded_;
    s.decode_seconds = double(decode_ns_) * 1e-9;
    s.batches_assembled = batches_assembled_;
    s.assemble_seconds = double(assemble_ns_) * 1e-9;
    s.skipped = skipped_;
    s.corrupt = corrupt_.size();
    s.decode_threads = options_.threads;
    return s;
}

void Loader::read_stage(std::vector<std::int64_t> order) {
    name_thread("loader read");
    try {
        auto reader = source_->open_reader();
        const double probe_start = now_seconds();
        sample_shape_ = probe_sample_shape(*reader, order);
        read_ns_ += nanos_since(probe_start);
        for (std::size_t p = 0; p < order.size(); ++p) {
            {
                std::unique_lock lock(window_mutex_);
                window_cv_.wait(lock,
                                [&] { return stopping_ || std::int64_t(p) < taken_ + window_; });
                if (stopping_) return;
            }
            auto item = std::make_unique<Item>();
            item->position = std::int64_t(p);
            item->index = order[p];
            const double start = now_seconds();
            try {
                item->sample = reader->read(item->index);
            } catch (const CorruptSampleError& e) {
                item->corrupt = e.what();
                item->sample.key = source_->key(item->index);
            }
            read_ns_ += nanos_since(start);
            records_read_ += 1;
            if (!read_queue_->push(std::move(item))) return;
        }
        read_queue_->close();
    } catch (...) {
        fail(std::current_exception());
    }
}

Shape Loader::probe_sample_shape(SourceReader& reader, const std::vector<std::int64_t>& order) {
    // Corrupt samples met here are passed over; the decode threads meet them again and report
    // them in order. If none decodes, every slot will be a corrupt one and no slab needs pixels.
    const std::uint64_t epoch_key = rng_key(options_.seed, static_cast<std::uint64_t>(epoch_));
    std::vector<float> row;
    interaction_length_ = interaction_features_ = 0;
    for (const std::int64_t index : order) {
        {
            std::lock_guard lock(window_mutex_);
            if (stopping_) return Shape{};
        }
        try {
            const RawSample sample = reader.read(index);
            if ((sample.encoding == Encoding::interaction) != interactions_) continue;
            if (!interactions_)
                return transform_.prepare(sample, rng_key(epoch_key, std::uint64_t(index))).shape();
            row.resize(std::size_t(sample.height) + sample.width);
            decode_interaction(sample, row.data());
            interaction_length_ = sample.height;
            interaction_features_ = sample.width;
            return Shape{1, 1, std::int64_t(row.size())};
        } catch (const CorruptSampleError&) {
        }
    }
    return Shape{};
}

Loader::SlabPtr Loader::slab_for(std::int64_t position) {
    const std::int64_t b = options_.batch, chunk = position / b;
    std::lock_guard lock(slabs_mutex_);
    SlabPtr& slab = open_slabs_[chunk];
    if (!slab) {
        const std::int64_t count = std::min(b, shard_size() - chunk * b);
        slab =
            std::make_shared<BatchSlab>(chunk, count, b, sample_shape_, *device_, options_.layout);
    }
    return slab;
}

void Loader::decode_stage() {
    name_thread("loader decode");
    try {
        const std::uint64_t epoch_key = rng_key(options_.seed, static_cast<std::uint64_t>(epoch_));
        while (auto item = read_queue_->pop()) {
            Item& it = **item;
            SlabPtr slab = slab_for(it.position);
            const std::int64_t i = it.position - slab->chunk() * options_.batch;
            SlotRecord& slot = slab->slot(i);
            slot.index = it.index;
            slot.label = it.sample.label;
            slot.corrupt = std::move(it.corrupt);
            if (slot.corrupt.empty() &&
                (it.sample.encoding == Encoding::interaction) != interactions_)
                slot.corrupt = out_of_kind(it.sample, interactions_);
            if (slot.corrupt.empty()) {
                const double start = now_seconds();
                if (interactions_)
                    decode_interaction_slot(it.sample, *slab, i);
                else
                    decode_image_slot(it.sample, *slab, i, epoch_key);
                decode_ns_ += nanos_since(start);
                images_decoded_ += 1;
            }
            slot.key = std::move(it.sample.key);  // after decoding: its errors name the key
            if (slab->finish_slot()) {
                {
                    std::lock_guard lock(slabs_mutex_);
                    open_slabs_.erase(slab->chunk());
                }
                if (!done_queue_->push(std::move(slab))) return;
            }
        }
        if (--decoders_left_ == 0) done_queue_->close();
    } catch (...) {
        fail(std::current_exception());
    }
}

void Loader::decode_image_slot(const RawSample& sample, BatchSlab& slab, std::int64_t i,
                               std::uint64_t epoch_key) {
    SlotRecord& slot = slab.slot(i);
    try {
        const PreparedImage image =
            transform_.prepare(sample, rng_key(epoch_key, std::uint64_t(slot.index)));
        slot.shape = image.shape();
        // One of another shape is not written: the assembler reports it in order.
        if (slab.fits(slot)) transform_.write(image, options_.layout, slab.pixels(i));
    } catch (const CorruptSampleError& e) {
        slot.corrupt = e.what();
    }
}

void Loader::decode_interaction_slot(const RawSample& sample, BatchSlab& slab, std::int64_t i) {
    SlotRecord& slot = slab.slot(i);
    slot.shape = Shape{1, 1, std::int64_t(sample.height) + sample.width};
    // The same L + F split otherwise would pass the shape check with items read as features.
    const bool same = sample.height == interaction_length_ && sample.width == interaction_features_;
    try {
        if (same && slab.fits(slot)) {
            decode_interaction(sample, slab.pixels(i));
        } else {
            // Checked all the same: a damaged record is skipped whatever its shape, as a
            // corrupt image is, and the epoch's others may all be damaged (no shape at all).
            std::vector<float> row(std::size_t(slot.shape.numel()));
            decode_interaction(sample, row.data());
        }
    } catch (const CorruptSampleError& e) {
        slot.corrupt = e.what();
        return;
    }
    if (!same)
        slot.error = (sample.origin.empty() ? "" : sample.origin + ": ") + "record '" + sample.key +
                     "' holds " + std::to_string(sample.height) + " items and " +
                     std::to_string(sample.width) + " features, the epoch's first record " +
                     std::to_string(interaction_length_) + " and " +
                     std::to_string(interaction_features_) +
                     " (tandem import-interactions writes one shape a database)";
}

void Loader::assemble_stage() {
    name_thread("loader batch");
    try {
        // The assembler's busy time leaves out its waits for room in the batch queue.
        std::int64_t waited_ns = 0;
        BatchAssembler assembler(options_, *device_, source_->classes(), skipped_, corrupt_,
                                 [&](Batch batch) {
                                     batches_assembled_ += 1;
                                     const double start = now_seconds();
                                     const bool pushed = batch_queue_->push(std::move(batch));
                                     waited_ns += nanos_since(start);
                                     return pushed;
                                 });
        auto busy_since = [&](double start) {
            assemble_ns_ += nanos_since(start) - std::exchange(waited_ns, 0);
        };
        std::map<std::int64_t, SlabPtr> pending;  // finished out of order
        std::int64_t next_chunk = 0;
        while (next_chunk < chunks_) {
            auto found = pending.find(next_chunk);
            if (found == pending.end()) {
                auto slab = done_queue_->pop();
                if (!slab) return;  // cancelled: the queues were emptied
                const std::int64_t chunk = (*slab)->chunk();
                pending.emplace(chunk, std::move(*slab));
                continue;
            }
            const SlabPtr slab = std::move(found->second);
            pending.erase(found);
            ++next_chunk;
            {
                std::lock_guard lock(window_mutex_);
                taken_ = next_chunk * options_.batch;
            }
            window_cv_.notify_one();
            const double start = now_seconds();
            const bool shipped = assembler.add(*slab);
            busy_since(start);
            if (!shipped) return;
        }
        const double start = now_seconds();
        const bool shipped = assembler.finish();
        busy_since(start);
        if (shipped) batch_queue_->close();
    } catch (...) {
        fail(std::current_exception());
    }
}

}  // namespace tandem
