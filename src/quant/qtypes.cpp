// Quantization schemes by name, and the quant_min/quant_max rules of
// torch.ao.quantization.utils.calculate_qmin_qmax (PyTorch 1.13).

#include "qfx/quant/qtypes.h"

#include <c10/util/Exception.h>

#include <array>

namespace qfx::quant {
namespace {

constexpr std::array<std::pair<c10::QScheme, const char*>, 5> kQSchemeNames{{
    {c10::kPerTensorAffine, "torch.per_tensor_affine"},
    {c10::kPerChannelAffine, "torch.per_channel_affine"},
    {c10::kPerTensorSymmetric, "torch.per_tensor_symmetric"},
    {c10::kPerChannelSymmetric, "torch.per_channel_symmetric"},
    {c10::kPerChannelAffineFloatQParams, "torch.per_channel_affine_float_qparams"},
}};

}  // namespace

std::string qscheme_name(c10::QScheme qscheme) {
  for (const auto& [value, name] : kQSchemeNames) {
    if (value == qscheme) return name;
  }
  return "torch.<unknown qscheme>";
}

std::optional<c10::QScheme> parse_qscheme(std::string_view name) {
  for (const auto& [value, spelling] : kQSchemeNames) {
    if (name == spelling) return value;
  }
  return std::nullopt;
}

bool is_per_tensor(c10::QScheme q) { return q == c10::kPerTensorAffine || q == c10::kPerTensorSymmetric; }

bool is_per_channel(c10::QScheme q) {
  return q == c10::kPerChannelAffine || q == c10::kPerChannelSymmetric || q == c10::kPerChannelAffineFloatQParams;
}

bool is_symmetric(c10::QScheme q) { return q == c10::kPerTensorSymmetric || q == c10::kPerChannelSymmetric; }

bool is_float_qparams(c10::QScheme q) { return q == c10::kPerChannelAffineFloatQParams; }

bool is_quantized_dtype(c10::ScalarType dtype) {
  return dtype == c10::kQUInt8 || dtype == c10::kQInt8 || dtype == c10::kQUInt4x2 || dtype == c10::kQInt32;
}

std::pair<int64_t, int64_t> calculate_qmin_qmax(c10::optional<int64_t> quant_min, c10::optional<int64_t> quant_max,
                                                c10::ScalarType dtype, bool reduce_range) {
  if (quant_min && quant_max) {
    int64_t range = *quant_max - *quant_min + 1;
    if (dtype == c10::kQInt8) {
      TORCH_CHECK(range > 0 && range <= 256,
                  "quantization range should be positive and not exceed the maximum bit range (=256)");
    } else if (dtype == c10::kQInt32) {
      TORCH_CHECK(range > 0 && range <= (int64_t{1} << 31),
                  "quantization range should be positive and not exceed the maximum bit range (=4294967296)");
    }
    if (!reduce_range) return {*quant_min, *quant_max};
    auto floor_half = [](int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };  // Python's v // 2
    return {floor_half(*quant_min), floor_half(*quant_max)};
  }
  if (dtype == c10::kQInt8) return reduce_range ? std::make_pair(-64, 63) : std::make_pair(-128, 127);
  if (dtype == c10::kQUInt8) return reduce_range ? std::make_pair(0, 127) : std::make_pair(0, 255);
  if (dtype == c10::kQInt32) return {-(int64_t{1} << 31), (int64_t{1} << 31) - 1};
  return {0, 15};
}

}  // namespace qfx::quant
