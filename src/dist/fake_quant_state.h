#pragma once
// Where a fake-quantize module keeps its statistics, and its qparams
// recomputed from them: shared by the observer merges and the QAT sync.
// Internal to src/dist.

#include "qfx/quant/observer_base.h"

namespace qfx::dist::detail {

/// The module holding `observer`'s statistics: a FakeQuantize's or
/// FusedMovingAvgObsFakeQuantize's observer; any other observer itself.
quant::ActivationPostProcess& statistics_of(quant::ActivationPostProcess& observer);

/// A FakeQuantize's or FusedMovingAvgObsFakeQuantize's scale and zero_point
/// from its min/max statistics, once it has any; nothing for other modules.
void refresh_qparams(quant::ActivationPostProcess& observer);

}  // namespace qfx::dist::detail
