#include "fuzz/fuzz_target.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace qfx::fuzz {
namespace {

fs::path make_scratch() {
  std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  std::string pattern = base + "/qfx-fuzz-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a scratch directory in " + base);
  return pattern;
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
