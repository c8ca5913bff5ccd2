// Every committed fuzz input (tests/fuzz/corpus/TARGET/, and the inputs of
// findings, fixed since, in tests/fuzz/regressions/TARGET/) run through its
// target: no exception but c10::Error, no crash, no sanitizer report (under
// make test-sanitize).
#include "fuzz/fuzz_target.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs_of(const std::string& folder) {
  std::vector<fs::path> files;
  fs::path dir = qfx::test::source_file("tests/fuzz/" + folder);
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Runs `target` on each file; returns how many inputs it accepted.
int replay(const std::string& name, qfx::fuzz::TargetFn target, const std::vector<fs::path>& files) {
  int accepted = 0;
  for (const fs::path& file : files) {
    std::string bytes = read_bytes(file);
    try {
      accepted += target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " on " << file << ": " << e.what();
    }
  }
  return accepted;
}

}  // namespace

TEST(Fuzz, EveryTargetHasASeedCorpus) {
  std::vector<std::string> names;
  for (const auto& [name, fn] : qfx::fuzz::targets()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"archives", "idx_data", "image_data", "ir_text", "json_configs",
                                             "pt2_programs"}));
  for (const auto& name : names) EXPECT_GE(inputs_of("corpus/" + name).size(), 5u) << name;
}

// Also: each target's code under test accepts some of its corpus (a target
// that refused everything would fuzz only the first check).
TEST(Fuzz, CorporaAndRegressionsRunClean) {
  for (const auto& [name, target] : qfx::fuzz::targets()) {
    replay(name, target, inputs_of("regressions/" + name));
    EXPECT_GE(replay(name, target, inputs_of("corpus/" + name)), 3) << name;
  }
}
