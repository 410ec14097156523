#include "data/loader.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <opencv2/core.hpp>

#include "base/rng.h"
#include "data/dataset.h"
#include "device/device.h"
#include "layers/layer.h"

namespace tandem {
namespace {

double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::int64_t nanos_since(double start) { return std::int64_t((now_seconds() - start) * 1e9); }

}  // namespace

struct Loader::Item {
    std::int64_t position = 0;  // in this shard's epoch sequence
    std::int64_t index = 0;     // in the source
    RawSample sample;
    std::vector<float> pixels;
    Shape shape;
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
    : source_(std::move(source)),
      options_(std::move(options)),
      transform_(options_.transform),
      device_(options_.device ? options_.device.get() : &host_device()) {
    const LoaderOptions& o = options_;
    TANDEM_CHECK_AS(ConfigError, source_ != nullptr) << "a loader needs a data source";
    TANDEM_CHECK_AS(ConfigError, o.batch >= 1) << "loader batch must be >= 1, got " << o.batch;
    TANDEM_CHECK_AS(ConfigError, o.threads >= 1 && o.threads <= 256)
        << "loader threads must be in [1, 256], got " << o.threads;
    TANDEM_CHECK_AS(ConfigError,
                    o.shard_count >= 1 && o.shard_index >= 0 && o.shard_index < o.shard_count)
        << "loader shard " << o.shard_index << " of " << o.shard_count
        << ": needs 0 <= shard_index < shard_count";
    TANDEM_CHECK_AS(ConfigError, o.prefetch >= 1)
        << "loader prefetch must be >= 1, got " << o.prefetch;
    TANDEM_CHECK_AS(DataError, source_->size() > 0) << source_->description() << " is empty";
    TANDEM_CHECK_AS(DataError, shard_size() > 0)
        << "shard " << o.shard_index << " of " << o.shard_count << " of " << source_->description()
        << " is empty";
    // The decode threads are the parallelism; OpenCV's own pool would oversubscribe the cores
    // and make `threads` mean less than it says.
    cv::setNumThreads(0);
}

Loader::~Loader() { close(); }

std::int64_t Loader::shard_size() const {
    const std::int64_t n = source_->size(), k = options_.shard_count, i = options_.shard_index;
    return n / k + (i < n % k ? 1 : 0);
}

std::int64_t Loader::batches_per_epoch() const {
    const std::int64_t n = shard_size(), b = options_.batch;
    return options_.last == LastBatch::drop ? n / b : (n + b - 1) / b;
}

void Loader::start_epoch(std::int64_t epoch) {
    close();
    const std::vector<std::int64_t> all =
        epoch_order(source_->size(), options_.seed, epoch, options_.shuffle);
    std::vector<std::int64_t> order;
    order.reserve(static_cast<std::size_t>(shard_size()));
    for (std::size_t p = std::size_t(options_.shard_index); p < all.size();
         p += std::size_t(options_.shard_count))
        order.push_back(all[p]);

    epoch_ = epoch;
    const auto t = static_cast<std::size_t>(options_.threads);
    const std::size_t queue = std::size_t(std::min<std::int64_t>(options_.batch, 256)) + 2 * t;
    read_queue_ = std::make_unique<BoundedQueue<std::unique_ptr<Item>>>(queue);
    done_queue_ = std::make_unique<BoundedQueue<std::unique_ptr<Item>>>(queue);
    batch_queue_ = std::make_unique<BoundedQueue<Batch>>(std::size_t(options_.prefetch));
    {
        std::lock_guard lock(window_mutex_);
        stopping_ = false;
        taken_ = 0;
        window_ = std::int64_t(2 * queue + t) + options_.batch;
    }
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
    s.decode_threads = options_.threads;
    return s;
}

void Loader::read_stage(std::vector<std::int64_t> order) {
    try {
        auto reader = source_->open_reader();
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

void Loader::decode_stage() {
    try {
        const std::uint64_t epoch_key = rng_key(options_.seed, static_cast<std::uint64_t>(epoch_));
        while (auto item = read_queue_->pop()) {
            Item& it = **item;
            if (it.corrupt.empty()) {
                const double start = now_seconds();
                try {
                    it.shape =
                        transform_.apply(it.sample, rng_key(epoch_key, std::uint64_t(it.index)),
                                         options_.layout, it.pixels);
                } catch (const CorruptSampleError& e) {
                    it.corrupt = e.what();
                }
                decode_ns_ += nanos_since(start);
                images_decoded_ += 1;
            }
            it.sample.bytes = std::string();  // the encoded bytes are no longer needed
            if (!done_queue_->push(std::move(*item))) return;
        }
        if (--decoders_left_ == 0) done_queue_->close();
    } catch (...) {
        fail(std::current_exception());
    }
}

void Loader::assemble_stage() {
    try {
        const std::int64_t b = options_.batch;
        const bool direct = device_->host_accessible();
        const std::int64_t total = shard_size();
        std::map<std::int64_t, std::unique_ptr<Item>> pending;  // arrived out of order
        std::int64_t next_position = 0;
        Shape sample;  // C x H x W of every sample, fixed by the first
        std::int64_t per_sample = 0, filled = 0;
        Batch batch;
        std::vector<float> staged;  // the images when the device is not host-readable
        std::vector<std::int32_t> labels(static_cast<std::size_t>(b));
        float* images = nullptr;

        // Moves the finished batch (its first `filled` samples, padded or cut by `last`) out.
        auto ship = [&](std::int64_t count) -> bool {
            const double start = now_seconds();
            const std::size_t bytes = std::size_t(per_sample) * sizeof(float);
            std::int64_t rows = count;
            if (count < b && options_.last == LastBatch::pad) {
                for (std::int64_t j = count; j < b; ++j) {
                    std::memcpy(images + j * per_sample, images + (j % count) * per_sample, bytes);
                    labels[std::size_t(j)] = labels[std::size_t(j % count)];
                    batch.indices.push_back(batch.indices[std::size_t(j % count)]);
                }
                rows = b;
            } else if (count < b) {  // keep: a smaller batch
                Tensor smaller = Tensor::empty(Shape{count, sample[0], sample[1], sample[2]},
                                               *device_, DType::f32, options_.layout);
                if (direct) std::memcpy(smaller.raw(), images, bytes * std::size_t(count));
                batch.images = std::move(smaller);
            }
            if (rows != b) batch.labels = Tensor::empty({rows}, *device_, DType::i32);
            if (direct) {
                std::memcpy(batch.labels.raw(), labels.data(),
                            std::size_t(rows) * sizeof(std::int32_t));
            } else {
                device_->copy_from_host(batch.images.raw(), staged.data(),
                                        bytes * std::size_t(rows));
                device_->copy_from_host(batch.labels.raw(), labels.data(),
                                        std::size_t(rows) * sizeof(std::int32_t));
            }
            batch.count = count;
            assemble_ns_ += nanos_since(start);
            batches_assembled_ += 1;
            filled = 0;
            return batch_queue_->push(std::exchange(batch, Batch{}));
        };

        for (;;) {
            auto found = pending.find(next_position);
            if (found == pending.end()) {
                auto item = done_queue_->pop();
                if (!item) break;
                const std::int64_t position = (*item)->position;
                pending.emplace(position, std::move(*item));
                continue;
            }
            std::unique_ptr<Item> item = std::move(found->second);
            pending.erase(found);
            ++next_position;
            {
                std::lock_guard lock(window_mutex_);
                taken_ = next_position;
            }
            window_cv_.notify_one();
            if (!item->corrupt.empty()) {
                TANDEM_CHECK_AS(CorruptSampleError, !options_.strict)
                    << item->corrupt << " (strict: corrupt samples are errors)";
                skipped_ += 1;
                if (!options_.quiet)
                    std::fprintf(stderr, "warning: skipping corrupt sample: %s\n",
                                 item->corrupt.c_str());
                continue;
            }
            const double start = now_seconds();
            if (per_sample == 0) {
                sample = item->shape;
                per_sample = sample.numel();
            }
            TANDEM_CHECK_AS(DataError, item->shape == sample)
                << "image '" << item->sample.key << "' is " << item->shape.to_string()
                << " after its transforms, the batch holds " << sample.to_string()
                << " images; give a crop (or resize) so every image has one size";
            TANDEM_CHECK_AS(DataError,
                            item->sample.label >= 0 && item->sample.label < source_->classes())
                << "image '" << item->sample.key << "' has label " << item->sample.label
                << ", out of range for " << source_->classes() << " classes";
            if (filled == 0) {
                batch.images = Tensor::empty(Shape{b, sample[0], sample[1], sample[2]}, *device_,
                                             DType::f32, options_.layout);
                batch.labels = Tensor::empty({b}, *device_, DType::i32);
                if (direct) {
                    images = static_cast<float*>(batch.images.raw());
                } else {
                    staged.resize(std::size_t(b * per_sample));
                    images = staged.data();
                }
            }
            std::memcpy(images + filled * per_sample, item->pixels.data(),
                        std::size_t(per_sample) * sizeof(float));
            labels[std::size_t(filled)] = item->sample.label;
            batch.indices.push_back(item->index);
            ++filled;
            assemble_ns_ += nanos_since(start);
            if (filled == b && !ship(b)) return;
        }
        if (next_position < total) return;  // cancelled: the queues were emptied
        if (filled > 0 && options_.last != LastBatch::drop && !ship(filled)) return;
        batch_queue_->close();
    } catch (...) {
        fail(std::current_exception());
    }
}

}  // namespace tandem
