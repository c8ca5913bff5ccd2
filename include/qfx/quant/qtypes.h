#pragma once
/// \file
/// Quantized dtypes and quantization schemes, by their PyTorch names
/// (`torch.quint8`, `torch.per_channel_symmetric`), and the quantization range
/// rules of `torch.ao.quantization.utils.calculate_qmin_qmax`.

#include <c10/core/QScheme.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace qfx::quant {

/// `torch.per_tensor_affine`, ... (PyTorch's `repr(qscheme)`).
std::string qscheme_name(c10::QScheme qscheme);
/// Reads `torch.per_tensor_affine`, ...
std::optional<c10::QScheme> parse_qscheme(std::string_view name);

bool is_per_tensor(c10::QScheme qscheme);
bool is_per_channel(c10::QScheme qscheme);
bool is_symmetric(c10::QScheme qscheme);
bool is_float_qparams(c10::QScheme qscheme);

/// True for the dtypes observers quantize to: quint8, qint8, quint4x2, qint32.
bool is_quantized_dtype(c10::ScalarType dtype);

/// PyTorch's calculate_qmin_qmax: the (quant_min, quant_max) an observer uses.
/// With an explicit range, `reduce_range` halves both ends with floor
/// division; without one, the dtype's full (or reduced) 8-bit range, the
/// int32 range for qint32, and [0, 15] otherwise. Raises c10::Error for an
/// explicit range that does not fit the dtype.
std::pair<int64_t, int64_t> calculate_qmin_qmax(c10::optional<int64_t> quant_min, c10::optional<int64_t> quant_max,
                                                c10::ScalarType dtype, bool reduce_range);

/// The float32 machine epsilon, observers' default `eps` (2^-23).
constexpr double kFloat32Eps = 1.1920928955078125e-07;

}  // namespace qfx::quant
