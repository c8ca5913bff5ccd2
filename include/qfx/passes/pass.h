#pragma once
/// \file
/// Passes: each one a function `bool pass(GraphModule&, const XOptions&)`
/// (its own options struct) that rewrites a GraphModule in place and returns
/// true when it changed something. The registry lists every pass under a kebab-case name with a
/// one-line summary; PassManager (pass_manager.h) runs a pipeline of them.

#include "qfx/backend/backend_config.h"
#include "qfx/passes/custom_config.h"
#include "qfx/quant/qconfig_mapping.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace qfx::ir {
class GraphModule;
}

namespace qfx::passes {

class JobRunner;

/// A pipeline's settings (`qfx opt`'s flags, quantize.h's arguments). Each
/// pass reads only its own options struct below; the registry's row of a
/// pass takes its part of these.
struct PassOptions {
  /// What the backend runs; null means the native backend (PyTorch's default).
  std::shared_ptr<const backend::BackendConfig> backend_config;
  /// What the user asks for; null means every node stays float.
  std::shared_ptr<const quant::QConfigMapping> qconfig_mapping;
  /// prepare_qat_fx: fusions keep batch norms (ConvBn2d), QAT modules are swapped in.
  bool is_qat = false;
  /// Graph inputs that arrive quantized (quint8), by position
  /// (PrepareCustomConfig's input_quantized_indexes).
  std::vector<int64_t> input_quantized_indexes;
  /// `{0}` when the graph output stays quantized (output_quantized_indexes).
  std::vector<int64_t> output_quantized_indexes;
  /// Standalone modules' and custom module classes' configs (insert-observers,
  /// convert-to-reference); null means none.
  std::shared_ptr<const PrepareCustomConfig> prepare_custom_config;
  /// Custom module classes' quantized classes (convert-to-reference).
  std::shared_ptr<const ConvertCustomConfig> convert_custom_config;
  /// The model is a standalone module of another (insert-observers records
  /// its quantized input/output indexes for the parent).
  bool is_standalone = false;
  /// When set, passes say here why a candidate was not rewritten (`--explain`).
  std::ostream* explain = nullptr;
  /// Runs the passes' independent jobs (pass_jobs.h); null runs each job
  /// when the pass takes its result. The PassManager sets its own.
  JobRunner* jobs = nullptr;
  /// The calibration batches (each the model's positional inputs), for
  /// passes that measure the float model (correct-bias).
  std::shared_ptr<const std::vector<std::vector<c10::IValue>>> calibration_inputs;
  /// Adam steps per layer of `adaround`.
  int64_t adaround_iterations = 500;
};

/// The backend a pass reads.
struct BackendOption {
  /// Null means the native backend (PyTorch's default).
  std::shared_ptr<const backend::BackendConfig> backend_config;
  /// The backend config, or the native one when none is set.
  const backend::BackendConfig& backend() const;
};

/// `fuse`'s options.
struct FuseOptions : BackendOption {
  bool is_qat = false;              ///< keep batch norms (ConvBn2d) for QAT
  std::ostream* explain = nullptr;  ///< why a candidate was not fused
  JobRunner* jobs = nullptr;        ///< builds fused modules beside the pass (null: in it)
  static FuseOptions of(const PassOptions& pipeline);
};

/// `equalize`'s options.
struct EqualizeOptions {
  std::ostream* explain = nullptr;  ///< lists the pairs equalized
  static EqualizeOptions of(const PassOptions& pipeline);
};

/// What the passes that measure the float model on calibration data read
/// (correct-bias, adaround).
struct CalibratedPassOptions : BackendOption {
  std::shared_ptr<const quant::QConfigMapping> qconfig_mapping;  ///< required: the nodes' weight observers
  /// Required: the batches the layers' inputs are measured on.
  std::shared_ptr<const std::vector<std::vector<c10::IValue>>> calibration_inputs;
  std::ostream* explain = nullptr;  ///< what the pass did to each layer
  /// c10::Error naming `pass` when the mapping or the data is missing.
  void check(const char* pass) const;

 protected:
  void take(const PassOptions& pipeline);
};

/// `correct-bias`'s options.
struct CorrectBiasOptions : CalibratedPassOptions {
  static CorrectBiasOptions of(const PassOptions& pipeline);
};

/// `adaround`'s options.
struct AdaroundOptions : CalibratedPassOptions {
  int64_t iterations = 500;  ///< Adam steps per layer
  static AdaroundOptions of(const PassOptions& pipeline);
};

/// `swap-qat-modules`' options.
struct SwapQatModulesOptions : BackendOption {
  std::shared_ptr<const quant::QConfigMapping> qconfig_mapping;  ///< required
  static SwapQatModulesOptions of(const PassOptions& pipeline);
};

/// `insert-observers`' options.
struct InsertObserversOptions : BackendOption {
  std::shared_ptr<const quant::QConfigMapping> qconfig_mapping;      ///< required
  bool is_qat = false;                                               ///< fake-quantize instead of observe
  std::vector<int64_t> input_quantized_indexes;                      ///< graph inputs that arrive quantized
  std::vector<int64_t> output_quantized_indexes;                     ///< graph outputs that stay quantized
  std::shared_ptr<const PrepareCustomConfig> prepare_custom_config;  ///< standalone and custom modules
  bool is_standalone = false;       ///< record quantized input/output indexes for the parent
  std::ostream* explain = nullptr;  ///< why a node stays float
  static InsertObserversOptions of(const PassOptions& pipeline);
};

/// `convert-to-reference`'s options.
struct ConvertToReferenceOptions : BackendOption {
  std::vector<int64_t> input_quantized_indexes;                      ///< graph inputs that arrive quantized
  std::vector<int64_t> output_quantized_indexes;                     ///< graph outputs that stay quantized
  std::shared_ptr<const ConvertCustomConfig> convert_custom_config;  ///< custom modules' quantized classes
  JobRunner* jobs = nullptr;  ///< makes reference modules beside the pass (null: in it)
  static ConvertToReferenceOptions of(const PassOptions& pipeline);
};

/// `lower-to-native`'s options.
struct LowerToNativeOptions {
  std::ostream* explain = nullptr;  ///< why a pattern stays reference
  JobRunner* jobs = nullptr;        ///< prepacks weights beside the pass (null: in it)
  static LowerToNativeOptions of(const PassOptions& pipeline);
};

/// A pass as the registry runs it: on a pipeline's settings, of which it
/// takes its own options; rewrites `gm`, returns true when it changed something.
using PassFn = bool (*)(ir::GraphModule& gm, const PassOptions& options);

/// One row of the pass registry.
struct PassInfo {
  const char* name;     ///< kebab-case, as `qfx opt --passes` takes it
  const char* summary;  ///< one line
  PassFn run;
};

/// Every pass, in pipeline order.
const std::vector<PassInfo>& pass_registry();

/// The pass called `name`; c10::Error listing the names if there is none.
const PassInfo& find_pass(const std::string& name);

/// `fuse`: replaces the BackendConfig's fusion patterns (configs with a fuser
/// method or a fused module) by their fused modules, as PyTorch's fuse_fx.
bool fuse(ir::GraphModule& gm, const FuseOptions& options = {});

/// `equalize`: cross-layer equalization (Nagel et al. 2019): for each conv or
/// linear whose output feeds another alone (directly or through a ReLU,
/// fused or not), scales the first's output channels down and the second's
/// input channels up so each channel's weight range is the same in both;
/// the float model computes the same function. Run after `fuse` (batch
/// norms folded).
bool equalize(ir::GraphModule& gm, const EqualizeOptions& options = {});

/// `correct-bias`: empirical bias correction (Nagel et al. 2019): each conv
/// or linear whose qconfig quantizes its weight gets b -= (W~ - W) E[x], with
/// W~ the weight as its qconfig's weight observer quantizes it and E[x] the
/// per-channel mean of its input on the calibration data. Run after `fuse`
/// (and `equalize`), before observation.
bool correct_bias(ir::GraphModule& gm, const CorrectBiasOptions& options);

/// `adaround`: learned rounding (Nagel et al. 2020): each conv or linear whose
/// qconfig quantizes its weight gets weights on its quantization grid, each
/// rounded up or down as minimizes the layer's output error on the
/// calibration data (its float inputs), learned with LibTorch autograd. The
/// qparams are the weight observer's; each channel's smallest and largest
/// weight keep their values, so a min/max weight observer gives the same
/// qparams at convert and the weights quantize exactly. Run after `fuse`
/// (and `equalize`), before observation.
bool adaround(ir::GraphModule& gm, const AdaroundOptions& options);

/// `swap-qat-modules`: each module with a qconfig whose type the
/// BackendConfig maps to a QAT module (`qat_module`) becomes that module
/// (nn/qat.h), as prepare_qat_fx's qat_swap_modules.
bool swap_qat_modules(ir::GraphModule& gm, const SwapQatModulesOptions& options);

/// `insert-observers`: observers (or fake-quantize modules) where the
/// QConfigMapping asks for quantization and the backend can run it, as
/// PyTorch's prepare_fx after fusion. Records each node's qconfig and
/// whether it was observed in its meta (prepare_state.h).
bool insert_observers(ir::GraphModule& gm, const InsertObserversOptions& options);

/// `convert-to-reference`: observers become quantize/dequantize nodes with
/// their qparams as attributes, observed weighted modules become reference
/// modules (PyTorch's convert_fx(is_reference=True) / convert_to_reference_fx).
bool convert_to_reference(ir::GraphModule& gm, const ConvertToReferenceOptions& options = {});

/// `lower-to-native`: reference patterns (dequantize - reference module or
/// op - quantize) become quantized modules and `torch.ops.quantized` ops on
/// prepacked weights for the current engine, as PyTorch 1.13's
/// _lower_to_native_backend. A pattern it cannot lower stays reference; with
/// `explain` set it says which and why.
bool lower_to_native(ir::GraphModule& gm, const LowerToNativeOptions& options = {});

/// `dce`: removes nodes whose values nobody uses and that have no side effects.
bool dce(ir::GraphModule& gm);

}  // namespace qfx::passes
