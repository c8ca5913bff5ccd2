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

/// A convolution's settings for prepacking; output_padding only for a transposed one.
struct ConvPrepackSettings {
  c10::IValue stride, padding, output_padding, dilation, groups;
};

/// quantized::conv{dims}_prepack, or conv_transpose{dims}_prepack when `transposed` ("1d", "2d", "3d").
c10::IValue prepack_conv(const std::string& dims, bool transposed, const c10::IValue& weight, const c10::IValue& bias,
                         const ConvPrepackSettings& s);

}  // namespace qfx::nn::detail
