#pragma once
// The qparams of a prepared graph's static int8 observers, computed beside
// convert's rewrite by the worker thread when a core is idle (the histogram
// searches are most of convert-to-reference's time), else as the rewrite
// asks. The rewrite takes them in its own order, with the warnings each
// computation raised issued then, so what it reports is unchanged.

#include "qfx/ir/graph_module.h"
#include "qfx/quant/observer_base.h"

#include "../ir/worker_thread.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace qfx::passes::detail {

/// Whether convert turns `obs` into quantize_per_tensor / _per_channel with
/// its calculate_qparams (a quint8 / qint8 observer, not a placeholder).
bool is_static_int8(const quant::ActivationPostProcess& obs);

class ObserverQParams {
 public:
  /// Starts on the qparams of the static int8 observers `gm`'s observer
  /// nodes call, in graph order. The rewrite may change the graph and the
  /// module tree meanwhile, not the observers.
  explicit ObserverQParams(const ir::GraphModule& gm);
  /// obs.calculate_qparams(): worked out beside when it was (re-issuing its
  /// warnings, raising its error), else now.
  quant::QParams of(quant::ActivationPostProcess& obs);

 private:
  std::vector<std::shared_ptr<quant::ActivationPostProcess>> observers_;  // the keys below stay theirs
  std::unordered_map<const quant::ActivationPostProcess*, size_t> index_;
  std::unique_ptr<ir::detail::Beside<quant::QParams>> results_;  // observers_[i]'s; last: stopped first
};

}  // namespace qfx::passes::detail
