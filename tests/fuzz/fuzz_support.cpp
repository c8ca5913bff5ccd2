#include "fuzz/fuzz_target.h"

#include <caffe2/serialize/inline_container.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace qfx::fuzz {
namespace {

fs::path make_scratch() {
  std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  std::string pattern = base + "/qfx-fuzz-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a scratch directory in " + base);
  return pattern;
}

constexpr std::string_view kMarker = "#qfx-record ";

std::vector<std::pair<std::string, std::string_view>> split_records(std::string_view in) {
  std::vector<std::pair<std::string, std::string_view>> records;
  if (in.substr(0, kMarker.size()) != kMarker) return records;
  std::string separator = "\n" + std::string(kMarker);
  size_t at = 0;
  while (at != std::string_view::npos) {
    size_t name_end = in.find('\n', at);
    if (name_end == std::string_view::npos) break;
    std::string name(in.substr(at + kMarker.size(), name_end - at - kMarker.size()));
    size_t next = in.find(separator, name_end + 1);
    std::string_view body =
        in.substr(name_end + 1, next == std::string_view::npos ? std::string_view::npos : next - name_end - 1);
    records.emplace_back(std::move(name), body);
    at = next == std::string_view::npos ? next : next + 1;
  }
  return records;
}

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path made = make_scratch();
    std::atexit([] { fs::remove_all(scratch_dir()); });
    return made;
  }();
  return dir;
}

}  // namespace

std::string zip_records(std::string_view in) {
  std::string archive;
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* buf, size_t n) {
      archive.append(static_cast<const char*>(buf), n);
      return n;
    });
    for (const auto& [name, body] : split_records(in)) {
      if (name == "version" || name == ".data/version") {
        writer.setMinVersion(std::stoull(std::string(body)) % 16);
      } else {
        writer.writeRecord(name, body.data(), body.size());
      }
    }
    writer.writeEndOfFile();
  } catch (const std::exception&) {  // c10::Error from the writer; std::stoull's errors
    return {};
  }
  return archive;
}

std::map<std::string, TargetFn>& targets() {
  static std::map<std::string, TargetFn> all;
  return all;
}

std::string scratch_file(const std::string& name, std::string_view bytes) {
  fs::path file = scratch_dir() / name;
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write scratch file " + file.string());
  return file.string();
}

void clear_scratch() {
  for (const auto& entry : fs::directory_iterator(scratch_dir())) fs::remove_all(entry.path());
}

}  // namespace qfx::fuzz
