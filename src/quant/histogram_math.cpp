// HistogramObserver kernels. The loops reproduce ATen's arithmetic exactly:
// histc bins in float with (x - lo) * (edges - 1) / (hi - lo) truncated, as
// ATen's histogramdd LINEAR_INTERPOLATION; cumsum with dtype=double is a
// sequential double sum; tensor-with-Python-scalar ops cast the scalar to the
// tensor's float32 first. Counting in int64 is exact; ATen's float counts are
// too until 2^24 in one bin.

#include "histogram_math.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <vector>

namespace qfx::quant::detail {

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
  const float left = static_cast<float>(min);
  const float right = static_cast<float>(max);
  const float edges_minus_one = static_cast<float>(bins);
  const float* data = x.data_ptr<float>();
  const int64_t n = x.numel();
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n / 65536 + 1));
  std::vector<std::vector<int64_t>> partial(chunks, std::vector<int64_t>(bins, 0));
  at::parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      std::vector<int64_t>& counts = partial[c];
      for (int64_t i = n * c / chunks; i < n * (c + 1) / chunks; ++i) {
        const float elt = data[i];
        if (!(elt >= left && elt <= right)) continue;
        int64_t pos = static_cast<int64_t>((elt - left) * edges_minus_one / (right - left));
        if (pos == bins) pos -= 1;  // the last bin includes its right edge
        ++counts[pos];
      }
    }
  });
  at::Tensor hist = at::zeros({bins}, at::kFloat);
  float* out = hist.data_ptr<float>();
  for (int64_t b = 0; b < bins; ++b) {
    int64_t total = 0;
    for (const auto& counts : partial) total += counts[b];
    out[b] = static_cast<float>(total);
  }
  return hist;
}

at::Tensor combine_histograms(const at::Tensor& orig_hist, const at::Tensor& new_hist, int64_t upsample_rate,
                              int64_t downsample_rate, int64_t start_idx, int64_t bins) {
  const int64_t length = bins * downsample_rate;
  TORCH_CHECK(start_idx >= 0 && start_idx + bins * upsample_rate <= length,
              "HistogramObserver: the old histogram does not fit the combined range");
  const float* upsampled = new_hist.contiguous().data_ptr<float>();
  // cumsum(dtype=double) over zeros, then U copies of each old bin, then zeros,
  // sampled at every D-th position; adding a zero leaves the sum unchanged.
  std::vector<double> integral(bins);
  double acc = 0.0;
  for (int64_t k = 0; k < bins; ++k) {
    const int64_t end = (k + 1) * downsample_rate;  // positions [k * D, end)
    for (int64_t i = std::max(k * downsample_rate, start_idx); i < std::min(end, start_idx + bins * upsample_rate); ++i) {
      acc += static_cast<double>(upsampled[(i - start_idx) / upsample_rate]);
    }
    integral[k] = acc;
  }
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

// HistogramObserver._get_norm: density * (end^3 - begin^3) / 3.
at::Tensor l2_norm(const at::Tensor& begin, const at::Tensor& end, const at::Tensor& density) {
  at::Tensor norm = (end * end * end - begin * begin * begin) / 3;
  return density * norm;
}

// HistogramObserver._compute_quantization_error, op for op.
double quantization_error(const at::Tensor& histogram, double bin_width, int64_t start_bin, int64_t end_bin,
                          int64_t dst_nbins) {
  const int64_t bins = histogram.numel();
  double dst_bin_width = bin_width * static_cast<double>(end_bin - start_bin + 1) / static_cast<double>(dst_nbins);
  if (dst_bin_width == 0.0) return 0.0;
  at::Tensor src_bin = at::arange(bins);
  at::Tensor src_bin_begin = (src_bin - start_bin) * bin_width;
  at::Tensor src_bin_end = src_bin_begin + bin_width;
  at::Tensor dst_bin_of_begin = at::clamp(at::div(src_bin_begin, dst_bin_width, "floor"), 0, dst_nbins - 1);
  at::Tensor dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width;
  at::Tensor dst_bin_of_end = at::clamp(at::div(src_bin_end, dst_bin_width, "floor"), 0, dst_nbins - 1);
  at::Tensor density = histogram / bin_width;
  at::Tensor norm = at::zeros({bins});
  at::Tensor delta_begin = src_bin_begin - dst_bin_of_begin_center;
  norm += l2_norm(delta_begin, at::ones({bins}) * (dst_bin_width / 2), density);
  norm += (dst_bin_of_end - dst_bin_of_begin - 1) *
          l2_norm(at::scalar_tensor(-dst_bin_width / 2, at::kFloat), at::scalar_tensor(dst_bin_width / 2, at::kFloat),
                  density);
  at::Tensor dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2;
  at::Tensor delta_end = src_bin_end - dst_bin_of_end_center;
  norm += l2_norm(at::scalar_tensor(-dst_bin_width / 2, at::kFloat), delta_end, density);
  return norm.sum().item<double>();
}

}  // namespace

std::pair<at::Tensor, at::Tensor> non_linear_param_search(const at::Tensor& histogram, const at::Tensor& min_val,
                                                          const at::Tensor& max_val, int64_t dst_nbins) {
  const int64_t bins = histogram.numel();
  at::Tensor bin_width = (max_val - min_val) / bins;
  const double total = at::sum(histogram).item<double>();
  at::Tensor csum_tensor = at::cumsum(histogram, 0).contiguous();
  const float* csum = csum_tensor.data_ptr<float>();
  // _compute_quantization_error's bin width is computed in double from .item().
  const double error_bin_width = (max_val.item<double>() - min_val.item<double>()) / static_cast<double>(bins);
  const double stepsize = 1e-5;
  double alpha = 0.0;
  double beta = 1.0;
  int64_t start_bin = 0;
  int64_t end_bin = bins - 1;
  double norm_min = INFINITY;
  while (alpha < beta) {
    const double next_alpha = alpha + stepsize;
    const double next_beta = beta - stepsize;
    // cSum[l] < next_alpha * total compares in float32, the tensor's dtype.
    const float lower = static_cast<float>(next_alpha * total);
    const float upper = static_cast<float>(next_beta * total);
    int64_t l = start_bin;
    int64_t r = end_bin;
    while (l < end_bin && csum[l] < lower) ++l;
    while (r > start_bin && csum[r] > upper) --r;
    int64_t next_start_bin = start_bin;
    int64_t next_end_bin = end_bin;
    if ((l - start_bin) > (end_bin - r)) {
      next_start_bin = l;
      alpha = next_alpha;
    } else {
      next_end_bin = r;
      beta = next_beta;
    }
    if (next_start_bin == start_bin && next_end_bin == end_bin) continue;
    double norm = quantization_error(histogram, error_bin_width, next_start_bin, next_end_bin, dst_nbins);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start_bin;
    end_bin = next_end_bin;
  }
  return {min_val + bin_width * start_bin, min_val + bin_width * (end_bin + 1)};
}

}  // namespace qfx::quant::detail
