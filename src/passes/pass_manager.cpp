// PassManager: a pipeline of registered passes, linted between passes.

#include "qfx/passes/pass_manager.h"

#include "qfx/ir/graph_module.h"

#include <c10/util/Exception.h>

#include <ostream>
#include <sstream>

namespace qfx::passes {

PassManager& PassManager::add(const std::string& name) {
  passes_.push_back(&find_pass(name));
  return *this;
}

PassManager& PassManager::add_list(const std::string& names) {
  std::stringstream stream(names);
  std::string name;
  while (std::getline(stream, name, ',')) {
    TORCH_CHECK(!name.empty(), "empty pass name in \"", names, "\"");
    add(name);
  }
  return *this;
}

PassManager& PassManager::set_lint(bool lint) {
  lint_ = lint;
  return *this;
}

PassManager& PassManager::print_after_all(std::ostream& out) {
  print_after_ = &out;
  return *this;
}

bool PassManager::run(ir::GraphModule& gm, const PassOptions& options) const {
  bool changed = false;
  for (const PassInfo* pass : passes_) {
    changed = pass->run(gm, options) || changed;
    if (lint_) {
      try {
        gm.lint();
      } catch (const c10::Error& e) {
        TORCH_CHECK(false, "after pass ", pass->name, ": ", e.what_without_backtrace());
      }
    }
    if (print_after_) *print_after_ << "// after " << pass->name << "\n" << gm.graph().to_string() << "\n";
  }
  return changed;
}

}  // namespace qfx::passes
