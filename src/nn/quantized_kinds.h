#pragma once
// The quantized module classes: PyTorch name, the name print() shows, and
// one C++ type per class for the module registry.

#include "qfx/nn/quantized.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace qfx::nn::detail {

/// A quantized module of class `type_name` (one of quantized_module_types()).
std::shared_ptr<QuantizedModuleImpl> make_quantized(const std::string& type_name, QuantizedCall call,
                                                    QuantizedAttributes attributes, std::string extra_repr);

/// Calls LibTorch operator `name`.`overload` through the dispatcher.
c10::IValue call_op(const char* name, const char* overload, std::vector<c10::IValue> args);
/// The same for an operator with several return values: all of them.
std::vector<c10::IValue> call_op_returning_all(const char* name, const char* overload, std::vector<c10::IValue> args);

}  // namespace qfx::nn::detail
