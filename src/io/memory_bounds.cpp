// Sizes checked before use: files against memory, tensors against storage.

#include "qfx/io/memory_bounds.h"

#include <c10/util/Exception.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace qfx::io {
namespace {

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();

std::string gigabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

void check_tensor(const at::Tensor& t, const std::string& what, const std::string& name, const RecordSize& record) {
  if (!t.defined() || !t.has_storage()) return;
  const uint64_t needed = bytes_read(t);
  uint64_t held = t.storage().nbytes();
  if (std::optional<uint64_t> size = record(t.storage())) held = std::min(held, *size);
  TORCH_CHECK(needed <= held, what, name, ": a tensor of sizes ", t.sizes(), " reads ",
              needed == kUnknown ? std::string("more bytes than fit in 64 bits") : std::to_string(needed) + " bytes",
              ", its data holds ", held, " (a truncated or corrupt record)");
}

void check_value(const c10::IValue& v, const std::string& what, const std::string& name, const RecordSize& record) {
  if (v.isTensor()) return check_tensor(v.toTensor(), what, name, record);
  if (v.isList()) {
    c10::ArrayRef<c10::IValue> items = v.toListRef();
    for (size_t i = 0; i < items.size(); ++i) check_value(items[i], what, name + "[" + std::to_string(i) + "]", record);
  } else if (v.isTuple()) {
    const auto& items = v.toTupleRef().elements();
    for (size_t i = 0; i < items.size(); ++i) check_value(items[i], what, name + "[" + std::to_string(i) + "]", record);
  } else if (v.isGenericDict()) {
    for (const auto& item : v.toGenericDict()) {
      std::ostringstream key;
      key << item.key();
      check_value(item.value(), what, name + "[" + key.str() + "]", record);
    }
  }
}

}  // namespace

uint64_t available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t value = 0, total = 0;
  std::string unit;
  bool found = false;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:" || key == "SwapFree:") {
      total += value * 1024;
      found = true;
    }
  }
  return found ? total : kUnknown;
}

void check_fits_in_memory(uint64_t bytes, const std::string& what) {
  const uint64_t available = available_memory();
  TORCH_CHECK(bytes <= available, what, " needs ", gigabytes(bytes), ", more than the ", gigabytes(available),
              " of memory available");
}

uint64_t bytes_read(const at::Tensor& t) {
  if (t.numel() == 0) return 0;
  __int128 last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += static_cast<__int128>(t.size(d) - 1) * t.stride(d);
  __int128 bytes = (last + 1) * static_cast<__int128>(t.element_size());
  return bytes > static_cast<__int128>(kUnknown) || bytes < 0 ? kUnknown : static_cast<uint64_t>(bytes);
}

void check_storages(const c10::IValue& value, const std::string& what, const RecordSize& record_size) {
  check_value(value, what, "", record_size);
}

}  // namespace qfx::io
