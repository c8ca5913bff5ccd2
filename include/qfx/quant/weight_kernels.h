#pragma once
/// \file
/// Kernels for the weights convert works on, written as loops that give the
/// same values as the ATen ops PyTorch 1.13 runs for them, parallel over
/// channels (SSE2, and AVX2 chosen at run time):
///
///   row_aminmax           at::aminmax(rows, 1): per-row minimum and maximum
///   quantize_channels     at::quantize_per_channel to qint8 / quint8
///   quantize_tensor       at::quantize_per_tensor to qint8 / quint8

#include <ATen/core/Tensor.h>

#include <utility>

namespace qfx::quant {

/// Whether row_aminmax, quantize_channels and quantize_tensor take 32
/// elements at a time with AVX2 (on by default when the CPU has it); tests
/// switch it off to check the SSE2 / scalar paths too.
bool& weight_kernels_use_avx2();

/// `at::aminmax(rows, 1)` for a 2-d float32 tensor: each row's minimum and
/// maximum (NaN if the row has one), as float32 tensors of `rows.size(0)`.
std::pair<at::Tensor, at::Tensor> row_aminmax(const at::Tensor& rows);

/// `at::quantize_per_channel(x, scales, zero_points, axis, dtype)`: the same
/// quantized tensor. Float32 input to qint8 / quint8 with integer zero points
/// is computed here; other cases (float qparams of embeddings), and invalid
/// arguments (for ATen's errors), go to ATen.
at::Tensor quantize_channels(const at::Tensor& x, const at::Tensor& scales, const at::Tensor& zero_points, int64_t axis,
                             c10::ScalarType dtype);

/// `at::quantize_per_tensor(x, scale, zero_point, dtype)` with 1-element
/// qparams: the same quantized tensor. Contiguous float32 input to qint8 /
/// quint8 with an integer zero point in range is computed here; the rest goes
/// to ATen (and its errors).
at::Tensor quantize_tensor(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& zero_point,
                           c10::ScalarType dtype);

}  // namespace qfx::quant
