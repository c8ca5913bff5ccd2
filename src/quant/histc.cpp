// histc as PyTorch 1.13 computes it: bins in float with (x - lo) / (hi - lo)
// * bins truncated (the product last, which differs from (x - lo) * bins /
// (hi - lo) when bins is not a power of two). Counting in integers is exact;
// ATen's float counts are too until 2^24 in one bin.

#include "histc.h"

#include "cpu_features.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace qfx::quant::detail {

namespace {

// What histc bins: [left, right] in `bins` bins. The element whose bits are
// `excluded` falls outside too (histc_inside: the other zero than a zero
// bound); by default a NaN, which is outside anyway.
struct Binning {
  float left;
  float right;
  int32_t bins;
  uint32_t excluded = 0x7fc00000u;
};

uint32_t bits_of(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

bool inside(float elt, const Binning& range) {
  return elt >= range.left && elt <= range.right && bits_of(elt) != range.excluded;
}

// The bin of one element, `(x - left) / width * bins` in float, truncated,
// the last bin taking its right edge; `bins + 1` outside [left, right], for
// NaN and for the excluded element.
int32_t position(float elt, const Binning& range, float scale, float width) {
  if (!inside(elt, range)) return range.bins + 1;
  auto p = static_cast<int32_t>((elt - range.left) / width * scale);
  return std::min(p, range.bins - 1);
}

#ifdef QFX_AVX2_KERNELS
// The SSE2 loop of `positions` eight at a time, for CPUs with AVX2 (chosen
// at run time; the library is built for baseline x86-64). Returns how many
// elements it did.
__attribute__((target("avx2"))) int64_t positions_avx2(const float* x, int64_t n, const Binning& range, float scale,
                                                       float width, int32_t* pos) {
  const __m256 vleft = _mm256_set1_ps(range.left), vright = _mm256_set1_ps(range.right);
  const __m256 vscale = _mm256_set1_ps(scale), vwidth = _mm256_set1_ps(width);
  const __m256i vexcluded = _mm256_set1_epi32(static_cast<int32_t>(range.excluded));
  const __m256i vlast = _mm256_set1_epi32(range.bins - 1), voutside = _mm256_set1_epi32(range.bins + 1);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 elt = _mm256_loadu_ps(x + i);
    const __m256 excluded = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(elt), vexcluded));
    const __m256 inside = _mm256_andnot_ps(
        excluded, _mm256_and_ps(_mm256_cmp_ps(elt, vleft, _CMP_GE_OQ), _mm256_cmp_ps(elt, vright, _CMP_LE_OQ)));
    const __m256 q = _mm256_mul_ps(_mm256_div_ps(_mm256_sub_ps(elt, vleft), vwidth), vscale);
    const __m256i p = _mm256_min_epi32(_mm256_cvttps_epi32(_mm256_and_ps(q, inside)), vlast);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pos + i),
                        _mm256_blendv_epi8(voutside, p, _mm256_castps_si256(inside)));
  }
  return i;
}
#endif

}  // namespace

bool& histc_uses_avx2() {
  static bool use = cpu_has_avx2();
  return use;
}

namespace {

// Bin positions of n elements, ATen 1.13's `(x - left) / width * bins` in
// float, truncated; the last bin takes its right edge and elements outside
// [left, right] (or NaN, or excluded) get `bins + 1`. SSE2 does four at a time
// with the same IEEE single-precision operations, AVX2 eight.
// A range wider than the largest float has an infinite width: ATen puts every
// element in bin 0 (x - left over infinity is 0).
void positions(const float* x, int64_t n, const Binning& range, int32_t* pos) {
  const float scale = static_cast<float>(range.bins);
  const float width = range.right - range.left;
  int64_t i = 0;
  if (!std::isfinite(width)) {
    for (; i < n; ++i) pos[i] = inside(x[i], range) ? 0 : range.bins + 1;
    return;
  }
#ifdef QFX_AVX2_KERNELS
  if (histc_uses_avx2()) i = positions_avx2(x, n, range, scale, width, pos);
#endif
#ifdef __SSE2__
  const __m128 vleft = _mm_set1_ps(range.left), vright = _mm_set1_ps(range.right);
  const __m128 vscale = _mm_set1_ps(scale), vwidth = _mm_set1_ps(width);
  const __m128i vexcluded = _mm_set1_epi32(static_cast<int32_t>(range.excluded));
  const __m128i vlast = _mm_set1_epi32(range.bins - 1), voutside = _mm_set1_epi32(range.bins + 1);
  for (; i + 4 <= n; i += 4) {
    __m128 elt = _mm_loadu_ps(x + i);
    __m128i inside =
        _mm_andnot_si128(_mm_cmpeq_epi32(_mm_castps_si128(elt), vexcluded),
                         _mm_castps_si128(_mm_and_ps(_mm_cmpge_ps(elt, vleft), _mm_cmple_ps(elt, vright))));
    __m128 q = _mm_mul_ps(_mm_div_ps(_mm_sub_ps(elt, vleft), vwidth), vscale);
    __m128i p = _mm_cvttps_epi32(_mm_and_ps(q, _mm_castsi128_ps(inside)));
    __m128i over = _mm_cmpgt_epi32(p, vlast);
    p = _mm_or_si128(_mm_andnot_si128(over, p), _mm_and_si128(over, vlast));
    p = _mm_or_si128(_mm_and_si128(inside, p), _mm_andnot_si128(inside, voutside));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(pos + i), p);
  }
#endif
  for (; i < n; ++i) pos[i] = position(x[i], range, scale, width);
}

// Elements whose bin positions are worked out at a time (on the stack).
constexpr int64_t kBlock = 1024;

// count_range for fewer elements than slots: straight into `counts`, where
// zeroing and adding up sub-histograms would cost more than the counting.
void count_few(const float* data, int64_t first, int64_t last, const Binning& range, std::vector<int64_t>& counts,
               std::atomic<bool>* outside) {
  int32_t pos[kBlock];
  for (int64_t begin = first; begin < last; begin += kBlock) {
    const int64_t n = std::min(kBlock, last - begin);
    positions(data + begin, n, range, pos);
    for (int64_t i = 0; i < n; ++i) ++counts[pos[i]];
    if (outside != nullptr && (counts.back() != 0 || outside->load())) {
      outside->store(true);
      return;
    }
  }
}

// Counts elements [first, last) into `counts` (bins + 2 slots; the last one
// takes what falls outside). Four interleaved sub-histograms keep runs of
// equal values (ReLU zeros) from serializing on one counter; their 32-bit
// counters (32 KB for 2048 bins, in L1) are added to `counts` every 2^31
// elements. With `outside`, stops after the first block that has an element
// outside the range (or once another chunk has found one) and sets it.
void count_range(const float* data, int64_t first, int64_t last, const Binning& range, std::vector<int64_t>& counts,
                 std::atomic<bool>* outside = nullptr) {
  constexpr int64_t kWays = 4;
  constexpr int64_t kFlushEvery = int64_t{1} << 31;
  const int64_t slots = range.bins + 2;
  if (last - first <= slots) return count_few(data, first, last, range, counts, outside);
  std::vector<uint32_t> sub(kWays * slots, 0);
  auto flush = [&] {
    for (int64_t w = 0; w < kWays; ++w) {
      for (int64_t b = 0; b < slots; ++b) counts[b] += sub[w * slots + b];
    }
    std::fill(sub.begin(), sub.end(), 0u);
  };
  int32_t pos[kBlock];
  for (int64_t begin = first; begin < last; begin += kBlock) {
    const int64_t n = std::min(kBlock, last - begin);
    positions(data + begin, n, range, pos);
    int64_t i = 0;
    for (; i + kWays <= n; i += kWays) {
      for (int64_t w = 0; w < kWays; ++w) ++sub[w * slots + pos[i + w]];
    }
    for (; i < n; ++i) ++sub[pos[i]];
    if (outside != nullptr) {
      const int64_t last_slot = slots - 1;
      if ((sub[last_slot] | sub[slots + last_slot] | sub[2 * slots + last_slot] | sub[3 * slots + last_slot]) != 0) {
        outside->store(true);
      }
      if (outside->load()) return;
    }
    if ((begin - first + n) % kFlushEvery == 0) flush();
  }
  flush();
}

// The counts of x over the range in chunks, one per thread for large x;
// false when `stop_outside` and an element falls outside the range.
bool count_chunks(const at::Tensor& x, const Binning& range, bool stop_outside,
                  std::vector<std::vector<int64_t>>& partial) {
  const float* data = x.data_ptr<float>();
  const int64_t n = x.numel();
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n / 65536));
  partial.assign(chunks, std::vector<int64_t>(range.bins + 2, 0));
  std::atomic<bool> outside{false};
  at::parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      count_range(data, n * c / chunks, n * (c + 1) / chunks, range, partial[c], stop_outside ? &outside : nullptr);
    }
  });
  return !outside.load();
}

// The chunks' counts summed into a float32 histogram of `bins` counts.
at::Tensor to_histogram(const std::vector<std::vector<int64_t>>& partial, int64_t bins) {
  at::Tensor hist = at::empty({bins}, at::kFloat);
  float* out = hist.data_ptr<float>();
  for (int64_t b = 0; b < bins; ++b) {
    int64_t total = 0;
    for (const auto& counts : partial) total += counts[b];
    out[b] = static_cast<float>(total);
  }
  return hist;
}

}  // namespace

at::Tensor histc(const at::Tensor& x_in, int64_t bins, double min, double max) {
  at::Tensor x = x_in.contiguous().to(at::kFloat);
  if (min == max && x.numel() > 0) {
    auto [lo, hi] = at::aminmax(x);
    min = lo.item<double>();
    max = hi.item<double>();
  }
  if (min == max) {
    min -= 1;
    max += 1;
  }
  TORCH_CHECK(std::isfinite(min) && std::isfinite(max), "histc: range of [", min, ", ", max, "] is not finite");
  TORCH_CHECK(min < max, "histc: max must be larger than min");
  std::vector<std::vector<int64_t>> partial;
  count_chunks(x, {static_cast<float>(min), static_cast<float>(max), static_cast<int32_t>(bins)}, false, partial);
  return to_histogram(partial, bins);
}

std::optional<at::Tensor> histc_inside(const at::Tensor& x_in, int64_t bins, float min, float max) {
  TORCH_CHECK(std::isfinite(min) && std::isfinite(max) && min < max, "histc_inside: [", min, ", ", max,
              "] is not a finite range");
  at::Tensor x = x_in.contiguous().to(at::kFloat);
  // Python's forward keeps the range's own zero only if the batch has no zero
  // of the other sign (aminmax may return either, and min/max the batch's)
  Binning range{min, max, static_cast<int32_t>(bins)};
  if (min == 0.0f) range.excluded = bits_of(-min);
  if (max == 0.0f) range.excluded = bits_of(-max);
  std::vector<std::vector<int64_t>> partial;
  if (!count_chunks(x, range, true, partial)) return std::nullopt;
  return to_histogram(partial, bins);
}

}  // namespace qfx::quant::detail
