// Weight kernels. quantize_channels reproduces ATen's quantize_val:
// q = clamp(int64(zero_point + nearbyint(x * (1.0f / float(scale)))), qmin,
// qmax), the sum in float; SSE2's and AVX2's float-to-int conversions round
// to nearest even as nearbyint does.

#include "qfx/quant/weight_kernels.h"

#include "cpu_features.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace qfx::quant {

bool& weight_kernels_use_avx2() {
  static bool use = detail::cpu_has_avx2();
  return use;
}

namespace {

#ifdef QFX_AVX2_KERNELS
/// The first n - n % 32 of n >= 32 floats, 32 at a time in four pairs of
/// registers: their minimum, maximum and whether one is NaN.
__attribute__((target("avx2"))) int64_t minmax_avx2(const float* x, int64_t n, float* lo, float* hi, bool* nan) {
  __m256 l[4], h[4], unordered = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    l[k] = h[k] = _mm256_loadu_ps(x + 8 * k);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(l[k], l[k], _CMP_UNORD_Q));
  }
  int64_t i = 32;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
      l[k] = _mm256_min_ps(l[k], v);
      h[k] = _mm256_max_ps(h[k], v);
      unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  alignas(32) float ls[8], hs[8];
  _mm256_store_ps(ls, _mm256_min_ps(_mm256_min_ps(l[0], l[1]), _mm256_min_ps(l[2], l[3])));
  _mm256_store_ps(hs, _mm256_max_ps(_mm256_max_ps(h[0], h[1]), _mm256_max_ps(h[2], h[3])));
  *lo = *std::min_element(ls, ls + 8);
  *hi = *std::max_element(hs, hs + 8);
  *nan = _mm256_movemask_ps(unordered) != 0;
  return i;
}
#endif

/// Minimum and maximum of n floats; NaN if any is NaN.
std::pair<float, float> span_minmax(const float* x, int64_t n) {
  float lo = x[0], hi = x[0];
  bool nan = false;
  int64_t i = 0;
#ifdef QFX_AVX2_KERNELS
  if (n >= 32 && weight_kernels_use_avx2()) i = minmax_avx2(x, n, &lo, &hi, &nan);
#endif
#ifdef __SSE2__
  if (i == 0 && n >= 4) {
    __m128 vlo = _mm_loadu_ps(x), vhi = vlo, vnan = _mm_cmpunord_ps(vlo, vlo);
    for (i = 4; i + 4 <= n; i += 4) {
      __m128 v = _mm_loadu_ps(x + i);
      vlo = _mm_min_ps(vlo, v);
      vhi = _mm_max_ps(vhi, v);
      vnan = _mm_or_ps(vnan, _mm_cmpunord_ps(v, v));
    }
    alignas(16) float l[4], h[4];
    _mm_store_ps(l, vlo);
    _mm_store_ps(h, vhi);
    nan = _mm_movemask_ps(vnan) != 0;
    lo = std::min({l[0], l[1], l[2], l[3]});
    hi = std::max({h[0], h[1], h[2], h[3]});
  }
#endif
  for (; i < n; ++i) {
    nan = nan || std::isnan(x[i]);
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (nan) lo = hi = std::numeric_limits<float>::quiet_NaN();
  return {lo, hi};
}

/// ATen's quantize_val for one element.
template <typename Q>
Q quantize_one(float inv_scale, float zero_point, float x) {
  constexpr int64_t qmin = std::numeric_limits<Q>::min();
  constexpr int64_t qmax = std::numeric_limits<Q>::max();
  auto q = static_cast<int64_t>(zero_point + std::nearbyint(x * inv_scale));
  return static_cast<Q>(std::min(std::max(q, qmin), qmax));
}

#ifdef __SSE2__
/// Four products x * inv_scale, or false when one of them is 2^30 or more in
/// magnitude, infinite or NaN (those take ATen's path one at a time).
inline bool scaled4(const float* x, __m128 vinv, __m128* p) {
  const __m128 vabs = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)), vlimit = _mm_set1_ps(1073741824.0f);
  *p = _mm_mul_ps(_mm_loadu_ps(x), vinv);
  return _mm_movemask_ps(_mm_cmpnlt_ps(_mm_and_ps(*p, vabs), vlimit)) == 0;
}

/// int32(zero_point + nearbyint(p)) of four products: nearbyint, the sum in
/// float, then the truncating cast, as quantize_val.
inline __m128i rounded4(__m128 p, __m128 vzp) {
  return _mm_cvttps_epi32(_mm_add_ps(vzp, _mm_cvtepi32_ps(_mm_cvtps_epi32(p))));
}

/// Sixteen int32 values narrowed with saturation to Q's range (the clamp of
/// quantize_val, Q being int8_t or uint8_t) and stored.
template <typename Q>
inline void store16(__m128i a, __m128i b, __m128i c, __m128i d, Q* out) {
  __m128i low = _mm_packs_epi32(a, b), high = _mm_packs_epi32(c, d);
  __m128i q = std::is_signed_v<Q> ? _mm_packs_epi16(low, high) : _mm_packus_epi16(low, high);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), q);
}
#endif

#ifdef QFX_AVX2_KERNELS
/// scaled4, rounded4 and store16 eight lanes wide: 32 elements at a time
/// while all 32 products are finite and below 2^30 in magnitude. Returns
/// where it stopped (a multiple of 32, or the first block it left).
template <typename Q>
__attribute__((target("avx2"))) int64_t quantize_avx2(const float* x, int64_t n, float inv_scale, float zp, Q* out) {
  const __m256 vinv = _mm256_set1_ps(inv_scale), vzp = _mm256_set1_ps(zp);
  const __m256 vabs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), vlimit = _mm256_set1_ps(1073741824.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 p[4], large = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      p[k] = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), vinv);
      large = _mm256_or_ps(large, _mm256_cmp_ps(_mm256_and_ps(p[k], vabs), vlimit, _CMP_NLT_UQ));
    }
    if (_mm256_movemask_ps(large) != 0) break;  // large, infinite or NaN: the narrower paths
    __m256i r[4];
    for (int k = 0; k < 4; ++k) {
      r[k] = _mm256_cvttps_epi32(_mm256_add_ps(vzp, _mm256_cvtepi32_ps(_mm256_cvtps_epi32(p[k]))));
    }
    const __m256i low = _mm256_packs_epi32(r[0], r[1]), high = _mm256_packs_epi32(r[2], r[3]);
    const __m256i q = std::is_signed_v<Q> ? _mm256_packs_epi16(low, high) : _mm256_packus_epi16(low, high);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(q, order));
  }
  return i;
}
#endif

/// n elements of one channel: 32 at a time with AVX2 up to the first block
/// with a large product, then sixteen at a time where all sixteen products
/// are finite and below 2^30 in magnitude (the rest, rare, one at a time as
/// ATen).
template <typename Q>
void quantize_span(const float* x, int64_t n, double scale, int64_t zero_point, Q* out) {
  const float inv_scale = 1.0f / static_cast<float>(scale);
  const auto zp = static_cast<float>(zero_point);
  int64_t i = 0;
#ifdef QFX_AVX2_KERNELS
  if (weight_kernels_use_avx2()) i = quantize_avx2<Q>(x, n, inv_scale, zp, out);
#endif
#ifdef __SSE2__
  const __m128 vinv = _mm_set1_ps(inv_scale), vzp = _mm_set1_ps(zp);
  for (; i + 16 <= n; i += 16) {
    __m128 p0, p1, p2, p3;
    if (!(scaled4(x + i, vinv, &p0) & scaled4(x + i + 4, vinv, &p1) & scaled4(x + i + 8, vinv, &p2) &
          scaled4(x + i + 12, vinv, &p3))) {  // large, infinite or NaN
      for (int k = 0; k < 16; ++k) out[i + k] = quantize_one<Q>(inv_scale, zp, x[i + k]);
      continue;
    }
    store16<Q>(rounded4(p0, vzp), rounded4(p1, vzp), rounded4(p2, vzp), rounded4(p3, vzp), out + i);
  }
#endif
  for (; i < n; ++i) out[i] = quantize_one<Q>(inv_scale, zp, x[i]);
}

/// The elements of the 1-d `t` as T, as `t.to(T)` gives them (read in place
/// for the dtypes qparams come in: no dispatch per module for small weights).
template <typename T>
std::vector<T> values_as(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  auto copy = [&](const auto* data) { return std::vector<T>(data, data + c.numel()); };
  switch (c.scalar_type()) {
    case at::kFloat: return copy(c.data_ptr<float>());
    case at::kDouble: return copy(c.data_ptr<double>());
    case at::kLong: return copy(c.data_ptr<int64_t>());
    case at::kInt: return copy(c.data_ptr<int32_t>());
    default: return values_as<T>(c.to(c10::CppTypeToScalarType<T>::value));
  }
}

template <typename QInt>
at::Tensor quantize_typed(const at::Tensor& x, const at::Tensor& scales, const at::Tensor& zero_points,
                          const std::vector<int64_t>& zd, int64_t axis, c10::ScalarType dtype) {
  using Q = typename QInt::underlying;
  const std::vector<double> sd = values_as<double>(scales);
  at::Tensor out =
      at::_empty_per_channel_affine_quantized(x.sizes(), scales, zero_points, axis, at::device(at::kCPU).dtype(dtype));
  const int64_t channels = x.size(axis);
  const int64_t batches = c10::size_to_dim_(axis, x.sizes());
  const int64_t elements = c10::size_from_dim_(axis + 1, x.sizes());
  const float* in = x.data_ptr<float>();
  Q* q = reinterpret_cast<Q*>(out.data_ptr<QInt>());
  at::parallel_for(0, batches * channels, std::max<int64_t>(1, 32768 / std::max<int64_t>(elements, 1)),
                   [&](int64_t first, int64_t last) {
                     for (int64_t bc = first; bc < last; ++bc) {
                       int64_t c = bc % channels;
                       quantize_span<Q>(in + bc * elements, elements, sd[c], zd[c], q + bc * elements);
                     }
                   });
  return out;
}

/// The whole of x with one scale and zero point, in chunks over the threads.
template <typename QInt>
at::Tensor quantize_whole(const at::Tensor& x, double scale, int64_t zero_point, c10::ScalarType dtype) {
  using Q = typename QInt::underlying;
  at::Tensor out = at::_empty_affine_quantized(x.sizes(), at::device(at::kCPU).dtype(dtype), scale, zero_point);
  const float* in = x.data_ptr<float>();
  Q* q = reinterpret_cast<Q*>(out.data_ptr<QInt>());
  at::parallel_for(0, x.numel(), 32768, [&](int64_t first, int64_t last) {
    quantize_span<Q>(in + first, last - first, scale, zero_point, q + first);
  });
  return out;
}

bool all_within(const std::vector<int64_t>& values, int64_t lo, int64_t hi) {
  return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v >= lo && v <= hi; });
}

}  // namespace

std::pair<at::Tensor, at::Tensor> row_aminmax(const at::Tensor& rows_in) {
  TORCH_CHECK(rows_in.dim() == 2 && rows_in.size(1) > 0, "row_aminmax: expected non-empty rows");
  at::Tensor rows = rows_in.to(at::kFloat).contiguous();
  const int64_t n = rows.size(0), width = rows.size(1);
  at::Tensor lo = at::empty({n}, at::kFloat), hi = at::empty({n}, at::kFloat);
  const float* data = rows.data_ptr<float>();
  float* lo_data = lo.data_ptr<float>();
  float* hi_data = hi.data_ptr<float>();
  at::parallel_for(0, n, std::max<int64_t>(1, 32768 / width), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) std::tie(lo_data[r], hi_data[r]) = span_minmax(data + r * width, width);
  });
  return {lo, hi};
}

at::Tensor quantize_channels(const at::Tensor& x, const at::Tensor& scales, const at::Tensor& zero_points, int64_t axis,
                             c10::ScalarType dtype) {
  const bool simple = x.scalar_type() == at::kFloat && x.device().is_cpu() && scales.device().is_cpu() &&
                      zero_points.device().is_cpu() && x.is_contiguous() && x.dim() > 0 && axis >= 0 &&
                      axis < x.dim() && scales.dim() == 1 && zero_points.dim() == 1 &&
                      !at::isFloatingType(zero_points.scalar_type()) &&  // float qparams: ATen
                      scales.numel() == x.size(axis) && zero_points.numel() == x.size(axis);
  if (!simple || (dtype != at::kQInt8 && dtype != at::kQUInt8)) {
    return at::quantize_per_channel(x, scales, zero_points, axis, dtype);
  }
  const std::vector<int64_t> zd = values_as<int64_t>(zero_points);
  if (dtype == at::kQInt8 && all_within(zd, -128, 127)) {
    return quantize_typed<c10::qint8>(x, scales, zero_points, zd, axis, dtype);
  }
  if (dtype == at::kQUInt8 && all_within(zd, 0, 255)) {
    return quantize_typed<c10::quint8>(x, scales, zero_points, zd, axis, dtype);
  }
  return at::quantize_per_channel(x, scales, zero_points, axis, dtype);
}

at::Tensor quantize_tensor(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& zero_point,
                           c10::ScalarType dtype) {
  const bool simple = x.scalar_type() == at::kFloat && x.device().is_cpu() && x.is_contiguous() &&
                      x.suggest_memory_format() == at::MemoryFormat::Contiguous && scale.numel() == 1 &&
                      zero_point.numel() == 1 && scale.device().is_cpu() && zero_point.device().is_cpu() &&
                      !at::isFloatingType(zero_point.scalar_type());
  if (simple && (dtype == at::kQInt8 || dtype == at::kQUInt8)) {
    const double s = values_as<double>(scale)[0];
    const int64_t zp = values_as<int64_t>(zero_point)[0];
    if (dtype == at::kQInt8 && zp >= -128 && zp <= 127) return quantize_whole<c10::qint8>(x, s, zp, dtype);
    if (dtype == at::kQUInt8 && zp >= 0 && zp <= 255) return quantize_whole<c10::quint8>(x, s, zp, dtype);
  }
  return at::quantize_per_tensor(x, scale, zero_point, dtype);
}

}  // namespace qfx::quant
