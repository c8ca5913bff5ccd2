// HistogramObserver's range search kernels. The loops reproduce ATen's
// arithmetic exactly: cumsum with dtype=double is a sequential double sum;
// tensor-with-Python-scalar ops cast the scalar to the tensor's float32 first.

#include "histogram_math.h"

#include "cpu_features.h"
#include "histc.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
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

// True when U copies of every bin sum exactly in double whatever the order:
// each value is a multiple of 2^lsb (its lowest mantissa bit), so is every
// partial sum, and all of them stay below 2^(52 + lsb).
bool copies_sum_exactly(const float* bins_data, int64_t bins, int64_t upsample_rate) {
  int lsb = std::numeric_limits<int>::max();
  double total = 0.0;
  for (int64_t j = 0; j < bins; ++j) {
    const float v = bins_data[j];
    if (v == 0.0f) continue;
    if (!std::isfinite(v)) return false;
    int exponent = 0;
    auto mantissa = static_cast<uint32_t>(std::ldexp(std::frexp(std::fabs(v), &exponent), 24));
    lsb = std::min(lsb, exponent - 24 + __builtin_ctz(mantissa));
    total += std::fabs(static_cast<double>(v));
  }
  return lsb == std::numeric_limits<int>::max() ||
         total * static_cast<double>(upsample_rate) < std::ldexp(1.0, 52 + std::max(lsb, -1000));
}

// The running sum of the upsampled old histogram at every D-th position
// (cumsum(dtype=double) over zeros, U copies of each old bin, zeros): the
// sum of the copies placed so far. Zeros leave the sum as it is, so only
// the U * bins copies are added, one at a time, in ATen's order; when the
// sums are exact, each sample is the closed form instead.
std::vector<double> upsampled_integral(const float* old_bins, int64_t bins, int64_t upsample_rate,
                                       int64_t downsample_rate, int64_t start_idx) {
  std::vector<double> integral(bins, 0.0);
  if (copies_sum_exactly(old_bins, bins, upsample_rate)) {
    std::vector<double> prefix(bins + 1, 0.0);  // U * (sum of the first j bins)
    for (int64_t j = 0; j < bins; ++j) prefix[j + 1] = prefix[j] + upsample_rate * static_cast<double>(old_bins[j]);
    for (int64_t k = 0; k < bins; ++k) {
      const int64_t copies = std::min((k + 1) * downsample_rate - start_idx, bins * upsample_rate);
      if (copies <= 0) continue;
      const int64_t j = copies / upsample_rate, r = copies % upsample_rate;
      integral[k] = prefix[j] + (r == 0 ? 0.0 : r * static_cast<double>(old_bins[j]));
    }
    return integral;
  }
  double acc = 0.0;
  int64_t k = start_idx / downsample_rate;  // samples before the copies see 0
  int64_t next_sample = (k + 1) * downsample_rate - 1;
  int64_t position = start_idx;
  for (int64_t j = 0; j < bins; ++j) {
    const double v = static_cast<double>(old_bins[j]);
    for (int64_t r = 0; r < upsample_rate; ++r, ++position) {
      acc += v;
      if (position == next_sample) {
        integral[k++] = acc;
        next_sample += downsample_rate;
      }
    }
  }
  for (; k < bins; ++k) integral[k] = acc;
  return integral;
}

}  // namespace

at::Tensor combine_histograms(const at::Tensor& orig_hist, const at::Tensor& new_hist, int64_t upsample_rate,
                              int64_t downsample_rate, int64_t start_idx, int64_t bins) {
  const int64_t length = bins * downsample_rate;
  TORCH_CHECK(start_idx >= 0 && start_idx + bins * upsample_rate <= length,
              "HistogramObserver: the old histogram does not fit the combined range");
  const at::Tensor old_hist = new_hist.contiguous();
  std::vector<double> integral =
      upsampled_integral(old_hist.data_ptr<float>(), bins, upsample_rate, downsample_rate, start_idx);
  at::Tensor result = orig_hist.contiguous().clone();
  float* out = result.data_ptr<float>();
  for (int64_t k = 0; k < bins; ++k) {
    double shifted = k == 0 ? 0.0 : static_cast<double>(static_cast<float>(integral[k - 1]));
    double interpolated = (integral[k] - shifted) / static_cast<double>(upsample_rate);
    out[k] = out[k] + static_cast<float>(interpolated);
  }
  return result;
}

namespace {

// The scalars of one quantization_error: bin widths as float32, the bins'
// offset, whether an empty bin's norm is +0 outright.
struct NormTerms {
  float width, dst_width, half, minus_half, last;
  int64_t start_bin;
  bool empty_is_zero;
};

// clamp(div(a, b, rounding_mode="floor"), 0, last) for float a and b > 0.
// ATen's floor division (fmod, then the exact quotient) gives the floor of
// the real quotient a / b; so does the double quotient of two floats, which
// cannot round up to the next integer (its distance to an integer is at
// least 2^-48 relative, beyond double's rounding). The clamp to [0, last]
// makes truncation the floor.
float dst_bin(float a, float b, float last) {
  const double q = static_cast<double>(a) / static_cast<double>(b);
  if (!(q > 0)) return 0.0f;
  if (q >= static_cast<double>(last)) return last;
  return static_cast<float>(static_cast<int64_t>(q));
}

// HistogramObserver._get_norm for one bin: density * (end^3 - begin^3) / 3.
float l2_norm(float begin, float end, float density) {
  return density * ((end * end * end - begin * begin * begin) / 3.0f);
}

#ifdef QFX_AVX2_KERNELS
// dst_bin of four floats: the double quotient truncated, clamped to [0,
// last] (max_pd gives its second operand, 0, for a NaN quotient).
__attribute__((target("avx2"))) inline __m128 dst_bins4_avx2(__m128 a, __m256d b, __m256d last) {
  const __m256d q = _mm256_div_pd(_mm256_cvtps_pd(a), b);
  const __m256d t = _mm256_round_pd(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  return _mm256_cvtpd_ps(_mm256_min_pd(_mm256_max_pd(t, _mm256_setzero_pd()), last));
}

// dst_bin of eight floats.
__attribute__((target("avx2"))) inline __m256 dst_bins_avx2(__m256 a, __m256d b, __m256d last) {
  return _mm256_set_m128(dst_bins4_avx2(_mm256_extractf128_ps(a, 1), b, last),
                         dst_bins4_avx2(_mm256_castps256_ps128(a), b, last));
}

// l2_norm of eight bins, the same float operations in the same order.
__attribute__((target("avx2"))) inline __m256 l2_norms_avx2(__m256 begin, __m256 end, __m256 density) {
  const __m256 cubes =
      _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(end, end), end), _mm256_mul_ps(_mm256_mul_ps(begin, begin), begin));
  return _mm256_mul_ps(density, _mm256_div_ps(cubes, _mm256_set1_ps(3.0f)));
}

// The per-bin norms of quantization_error eight bins at a time (AVX2, chosen
// at run time, without FMA: every product and sum rounds as the scalar loop's
// does; an empty bin's norm comes out as ±0, which sums as the scalar loop's
// +0 does). Returns how many bins it did.
__attribute__((target("avx2"))) int64_t norms_avx2(const float* hist, int64_t bins, const NormTerms& t, float* norm) {
  const __m256 width = _mm256_set1_ps(t.width), dst_width = _mm256_set1_ps(t.dst_width);
  const __m256 half = _mm256_set1_ps(t.half), minus_half = _mm256_set1_ps(t.minus_half);
  const __m256 one = _mm256_set1_ps(1.0f), point_five = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps();
  const __m256d dst_width_d = _mm256_set1_pd(static_cast<double>(t.dst_width));
  const __m256d last = _mm256_set1_pd(static_cast<double>(t.last));
  const __m256i step = _mm256_set1_epi32(8);
  __m256i k =
      _mm256_sub_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(static_cast<int32_t>(t.start_bin)));
  int64_t i = 0;
  for (; i + 8 <= bins; i += 8, k = _mm256_add_epi32(k, step)) {
    const __m256 begin = _mm256_mul_ps(_mm256_cvtepi32_ps(k), width);
    const __m256 end = _mm256_add_ps(begin, width);
    const __m256 dst_of_begin = dst_bins_avx2(begin, dst_width_d, last);
    const __m256 dst_of_end = dst_bins_avx2(end, dst_width_d, last);
    const __m256 density = _mm256_div_ps(_mm256_loadu_ps(hist + i), width);
    const __m256 begin_center = _mm256_mul_ps(_mm256_add_ps(dst_of_begin, point_five), dst_width);
    const __m256 end_center = _mm256_add_ps(_mm256_mul_ps(dst_of_end, dst_width), half);
    __m256 n = _mm256_add_ps(zero, l2_norms_avx2(_mm256_sub_ps(begin, begin_center), half, density));
    const __m256 inner = _mm256_sub_ps(_mm256_sub_ps(dst_of_end, dst_of_begin), one);
    n = _mm256_add_ps(n, _mm256_mul_ps(inner, l2_norms_avx2(minus_half, half, density)));
    n = _mm256_add_ps(n, l2_norms_avx2(minus_half, _mm256_sub_ps(end, end_center), density));
    _mm256_storeu_ps(norm + i, n);
  }
  return i;
}
#endif

// One bin's norm, the scalar loop of quantization_error.
float norm_of_bin(float h, int64_t k, const NormTerms& t) {
  if (t.empty_is_zero && h == 0.0f) return 0.0f;
  const float begin = static_cast<float>(k - t.start_bin) * t.width;
  const float end = begin + t.width;
  const float dst_of_begin = dst_bin(begin, t.dst_width, t.last);
  const float dst_of_end = dst_bin(end, t.dst_width, t.last);
  const float density = h / t.width;
  const float begin_center = (dst_of_begin + 0.5f) * t.dst_width;
  const float end_center = dst_of_end * t.dst_width + t.half;
  float n = 0.0f + l2_norm(begin - begin_center, t.half, density);
  n = n + (dst_of_end - dst_of_begin - 1.0f) * l2_norm(t.minus_half, t.half, density);
  return n + l2_norm(t.minus_half, end - end_center, density);
}

}  // namespace

double quantization_error(const at::Tensor& histogram, double bin_width, int64_t start_bin, int64_t end_bin,
                          int64_t dst_nbins) {
  const int64_t bins = histogram.numel();
  const double dst_bin_width =
      bin_width * static_cast<double>(end_bin - start_bin + 1) / static_cast<double>(dst_nbins);
  if (dst_bin_width == 0.0) return 0.0;
  // Python floats meet float32 tensors as float32 values.
  NormTerms terms;
  terms.width = static_cast<float>(bin_width);
  terms.dst_width = static_cast<float>(dst_bin_width);
  terms.half = static_cast<float>(dst_bin_width / 2);
  terms.minus_half = static_cast<float>(-dst_bin_width / 2);
  terms.last = static_cast<float>(dst_nbins - 1);
  terms.start_bin = start_bin;
  // An empty bin's norm is 0 * finite terms, +0, when no cube can overflow
  // (every distance is below 2 (bins + 1) bin widths).
  terms.empty_is_zero = std::pow(2.0 * static_cast<double>(bins + 1) * bin_width, 3) < 1e37;
  const at::Tensor contiguous = histogram.contiguous();
  const float* hist = contiguous.data_ptr<float>();
  thread_local std::vector<float> norms;  // reused: the search calls this often
  norms.resize(static_cast<size_t>(bins));
  float* norm = norms.data();
  int64_t k = 0;
#ifdef QFX_AVX2_KERNELS
  // bin indices as int32 lanes, floats exactly below 2^24
  if (histc_uses_avx2() && bins < (int64_t{1} << 23) && start_bin < bins) k = norms_avx2(hist, bins, terms, norm);
#endif
  for (; k < bins; ++k) norm[k] = norm_of_bin(hist[k], k, terms);
  // the sum in ATen's own reduction order
  return at::from_blob(norm, {bins}, at::kFloat).sum().item<double>();
}

namespace {

constexpr double kSearchStep = 1e-5;

// torch.cumsum of a float32 tensor on the CPU: a running double sum, each
// prefix rounded to float. The result lives in a buffer reused by the
// thread's next call (convert runs one search per observer).
const std::vector<float>& cumsum(const at::Tensor& histogram) {
  const at::Tensor contiguous = histogram.contiguous();
  const float* bins = contiguous.data_ptr<float>();
  thread_local std::vector<float> out;
  out.resize(static_cast<size_t>(contiguous.numel()));
  double sum = 0.0;
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(sum += static_cast<double>(bins[k]));
  return out;
}

// The values the search's alpha (0 + 1e-5 + 1e-5 ...) and beta (1 - 1e-5 -
// 1e-5 ...) take, in the loop's own double arithmetic: alpha_k and beta_k
// after k steps, until they pass each other.
struct SearchSteps {
  std::vector<double> alpha{0.0}, beta{1.0};
  SearchSteps() {
    while (alpha.back() <= 1.0 + kSearchStep) alpha.push_back(alpha.back() + kSearchStep);
    while (beta.back() >= -kSearchStep) beta.push_back(beta.back() - kSearchStep);
  }
};

const SearchSteps& search_steps() {
  static const SearchSteps steps;
  return steps;
}

// The first beta step j after `from` at which the search stops shrinking
// only beta without moving end_bin: alpha < beta_j fails, or upper(j) =
// float(beta_{j+1} * total) falls below csum[end_bin]. Both tests are monotone
// in j, so the loop's many idle steps on a sparse histogram are skipped by
// bisection.
size_t first_active_beta(const std::vector<double>& beta, size_t from, double alpha, double total, float end_csum,
                         bool single_bin) {
  auto idle = [&](size_t j) {
    return alpha < beta[j] && (single_bin || end_csum <= static_cast<float>(beta[j + 1] * total));
  };
  size_t lo = from, hi = beta.size() - 1;  // idle(lo - 1) held; idle(hi) is false (beta < 0 <= alpha)
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (idle(mid))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The search's l: the first bin in [start_bin, end_bin) whose cSum is at
// least `lower`, else end_bin; by bisection when cSum is non-decreasing.
int64_t first_at_least(const float* csum, int64_t start_bin, int64_t end_bin, float lower, bool sorted) {
  if (sorted) return std::max(start_bin, std::lower_bound(csum, csum + end_bin, lower) - csum);
  int64_t l = start_bin;
  while (l < end_bin && csum[l] < lower) ++l;
  return l;
}

// The search's r: the last bin in (start_bin, end_bin] whose cSum is at most
// `upper`, else start_bin.
int64_t last_at_most(const float* csum, int64_t start_bin, int64_t end_bin, float upper, bool sorted) {
  if (sorted) return std::max(start_bin, std::upper_bound(csum, csum + end_bin + 1, upper) - csum - 1);
  int64_t r = end_bin;
  while (r > start_bin && csum[r] > upper) --r;
  return r;
}

}  // namespace

// The loop of _non_linear_param_search, with alpha and beta read from the
// table of their values and the bins found by bisection of the cumulative
// sum (non-decreasing) instead of scans; the steps that change nothing are
// skipped (first_active_beta). Each step compares and computes exactly what
// the Python loop does.
std::pair<float, float> non_linear_param_search(const at::Tensor& histogram, float min_val, float max_val,
                                                int64_t dst_nbins) {
  const int64_t bins = histogram.numel();
  const double total = at::sum(histogram).item<double>();
  const std::vector<float>& cumulative = cumsum(histogram);
  const float* csum = cumulative.data();
  // _compute_quantization_error's bin width is computed in double from .item().
  const double error_bin_width =
      (static_cast<double>(max_val) - static_cast<double>(min_val)) / static_cast<double>(bins);
  // Bins are counts, but a combined histogram can hold tiny negative values.
  const bool sorted = std::isfinite(total) && std::is_sorted(csum, csum + bins);
  const SearchSteps& steps = search_steps();
  size_t a = 0, b = 0;  // alpha = steps.alpha[a], beta = steps.beta[b]
  int64_t start_bin = 0;
  int64_t end_bin = bins - 1;
  double norm_min = INFINITY;
  while (steps.alpha[a] < steps.beta[b]) {
    // cSum[l] < next_alpha * total compares in float32, the tensor's dtype.
    const float lower = static_cast<float>(steps.alpha[a + 1] * total);
    const float upper = static_cast<float>(steps.beta[b + 1] * total);
    const int64_t l = first_at_least(csum, start_bin, end_bin, lower, sorted);
    const int64_t r = last_at_most(csum, start_bin, end_bin, upper, sorted);
    int64_t next_start_bin = start_bin;
    int64_t next_end_bin = end_bin;
    if ((l - start_bin) > (end_bin - r)) {
      next_start_bin = l;
      ++a;
    } else {
      next_end_bin = r;
      ++b;
    }
    if (next_start_bin == start_bin && next_end_bin == end_bin) {
      b = first_active_beta(steps.beta, b, steps.alpha[a], total, csum[end_bin], start_bin == end_bin);
      continue;
    }
    double norm = quantization_error(histogram, error_bin_width, next_start_bin, next_end_bin, dst_nbins);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start_bin;
    end_bin = next_end_bin;
  }
  // the result in float32 tensor arithmetic: min_val + (max_val - min_val) / bins * bin
  const float bin_width = (max_val - min_val) / static_cast<float>(bins);
  return {min_val + bin_width * static_cast<float>(start_bin), min_val + bin_width * static_cast<float>(end_bin + 1)};
}

}  // namespace qfx::quant::detail
