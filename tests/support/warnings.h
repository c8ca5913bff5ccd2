#pragma once
// Collects the TORCH_WARN messages given while a WarningCollector is alive.

#include <c10/util/Exception.h>

#include <string>
#include <vector>

namespace qfx::test {

/// Installs itself as c10's warning handler; restores the previous one when destroyed.
class WarningCollector : public c10::WarningHandler {
 public:
  WarningCollector() : previous_(c10::Warning::get_warning_handler()) { c10::Warning::set_warning_handler(this); }
  ~WarningCollector() override { c10::Warning::set_warning_handler(previous_); }
  WarningCollector(const WarningCollector&) = delete;
  WarningCollector& operator=(const WarningCollector&) = delete;
  void process(const c10::SourceLocation&, const std::string& msg, const bool) override { messages.push_back(msg); }
  /// Every message, in order.
  std::vector<std::string> messages;

 private:
  c10::WarningHandler* previous_;
};

}  // namespace qfx::test
