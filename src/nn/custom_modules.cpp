// The registry of custom module classes.

#include "qfx/nn/custom_modules.h"

#include "qfx/nn/opaque_modules.h"

#include <c10/util/Exception.h>

#include <mutex>
#include <deque>

namespace qfx::nn {
namespace {

std::deque<CustomModuleClass>& classes() {
  static std::deque<CustomModuleClass> all;  // stable addresses
  return all;
}

std::mutex& classes_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void register_custom_module_class(CustomModuleClass custom_class) {
  std::lock_guard<std::mutex> lock(classes_mutex());
  for (const CustomModuleClass& c : classes()) {
    TORCH_CHECK(c.name != custom_class.name, "custom module class '", custom_class.name, "' is already registered");
  }
  classes().push_back(std::move(custom_class));
}

const CustomModuleClass* find_custom_module_class(const std::string& name) {
  std::lock_guard<std::mutex> lock(classes_mutex());
  for (const CustomModuleClass& c : classes()) {
    if (c.name == name || class_name_matches(c.name, name) || class_name_matches(name, c.name)) return &c;
  }
  return nullptr;
}

}  // namespace qfx::nn
