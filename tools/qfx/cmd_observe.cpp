// `qfx observe`: feeds tensors to a fresh observer and prints what it
// concludes — for backend developers checking an observer's choice.

#include "commands.h"

#include "qfx/io/tensor_io.h"
#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/calibration_observers.h"
#include "qfx/quant/histogram_observer.h"
#include "qfx/quant/qconfig_json.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <iostream>

namespace qfx::cli {
namespace {

// SPEC.json holds an observer spec, or a QConfig whose activation (or, with
// --weight, weight) observer is used.
quant::ObserverSpec read_spec(const std::string& file, bool weight) {
  nlohmann::json j = quant::load_json_file(file);
  try {
    bool is_qconfig = (j.is_object() && j.contains("activation")) ||
                      (j.is_string() && quant::qconfig_preset(j.get<std::string>()).has_value());
    if (!is_qconfig) return quant::spec_from_json(j, "");
    quant::QConfigAny qconfig = quant::qconfig_from_json(j, "");
    TORCH_CHECK(qconfig.has_value(), "the qconfig is null");
    return weight ? qconfig->weight : qconfig->activation;
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, file, ": ", e.what_without_backtrace());
  }
}

/// Runs `fn`, re-raising its c10::Error prefixed by `where`.
void in_context(const std::string& where, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, where, ": ", e.what_without_backtrace());
  }
}

nlohmann::json values(const at::Tensor& t) {
  at::Tensor flat = t.reshape({-1}).to(at::kDouble).contiguous();
  return std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
}

// min_val/max_val of the observers that keep them.
nlohmann::json range_of(const quant::ActivationPostProcess& observer, const char* which) {
  at::Tensor value;
  if (auto* m = dynamic_cast<const quant::MinMaxStatsObserver*>(&observer)) {
    value = std::string(which) == "min" ? m->min_val : m->max_val;
  } else if (auto* h = dynamic_cast<const quant::HistogramObserverImpl*>(&observer)) {
    value = std::string(which) == "min" ? h->min_val : h->max_val;
  } else if (auto* c = dynamic_cast<const quant::CalibrationObserver*>(&observer)) {
    value = std::string(which) == "min" ? c->min_val : c->max_val;
  } else {
    return nullptr;
  }
  return value.dim() == 0 ? nlohmann::json(value.item<double>()) : values(value);
}

}  // namespace

void add_observe_command(CLI::App& app, Action& action) {
  struct Options {
    std::string spec;
    std::string input;
    bool weight = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("observe", "Feed tensors to an observer and print its qparams as JSON");
  cmd->add_option("--observer", options->spec, "JSON file: an observer spec, or a qconfig")->required();
  cmd->add_option("--input", options->input, "torch.save file: a tensor, or a list of tensors (successive batches)")
      ->required();
  cmd->add_flag("--weight", options->weight, "use the qconfig's weight observer (default: its activation observer)");
  cmd->callback([options, &action] {
    action = [options] {
      c10::InferenceMode no_autograd;
      quant::ObserverSpec spec = read_spec(options->spec, options->weight);
      auto observer = spec.make();
      const std::string input = "'" + options->input + "'";
      size_t index = 0;
      for (const c10::IValue& batch : io::as_inputs(io::load_value(options->input), input)) {
        TORCH_CHECK(batch.isTensor(), input, " must hold tensors, not ", batch.tagKind());
        in_context(input + " batch " + std::to_string(index++) + ": " + spec.type(),
                   [&] { observer->forward(batch.toTensor()); });
      }
      quant::QParams q;
      in_context(spec.type() + " on " + input, [&] { q = observer->calculate_qparams(); });
      nlohmann::json out = {{"scale", values(q.scale)},
                            {"zero_point", values(q.zero_point)},
                            {"min_val", range_of(*observer, "min")},
                            {"max_val", range_of(*observer, "max")}};
      std::cout << out.dump(2) << "\n";
    };
  });
}

}  // namespace qfx::cli
