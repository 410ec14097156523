#include "tensor/storage.h"

#include "device/device.h"

namespace tandem {

Storage::Storage(Device& device, std::size_t bytes)
    : owner_(device.weak_from_this().lock()), device_(&device), bytes_(bytes),
      data_(device.allocator().allocate(bytes)) {}

Storage::~Storage() {
    device_->allocator().deallocate(data_, bytes_);
}

}  // namespace tandem
