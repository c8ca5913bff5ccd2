// Every observer configuration of the oracle on every input kind: the same
// scale and zero point bits (and dtype), min/max and histogram as PyTorch.

#include "support/fixtures.h"

#include "qfx/io/tensor_io.h"
#include "qfx/ir/python_literals.h"
#include "qfx/quant/histogram_observer.h"
#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/qconfig_json.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace qfx::quant {
namespace {

std::vector<double> doubles(const at::Tensor& t) {
  at::Tensor flat = t.reshape({-1}).to(at::kDouble).contiguous();
  return {flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel()};
}

std::vector<double> expected(const nlohmann::json& hexes) {
  std::vector<double> out;
  for (const auto& h : hexes) out.push_back(test::from_hex(h.get<std::string>()));
  return out;
}

// Bitwise equality of doubles (the sign of zero too), NaN equal to NaN.
void expect_same(const std::vector<double>& ours, const std::vector<double>& theirs, const std::string& what) {
  ASSERT_EQ(ours.size(), theirs.size()) << what;
  for (size_t i = 0; i < ours.size(); ++i) {
    bool same = (ours[i] == theirs[i] && std::signbit(ours[i]) == std::signbit(theirs[i])) ||
                (std::isnan(ours[i]) && std::isnan(theirs[i]));
    EXPECT_TRUE(same) << what << "[" << i << "]: " << ir::python_float_repr(ours[i]) << " vs "
                      << ir::python_float_repr(theirs[i]);
  }
}

std::pair<at::Tensor, at::Tensor> stats(const ActivationPostProcess& observer) {
  if (auto* m = dynamic_cast<const MinMaxStatsObserver*>(&observer)) return {m->min_val, m->max_val};
  auto& h = dynamic_cast<const HistogramObserverImpl&>(observer);
  return {h.min_val, h.max_val};
}

TEST(OracleObserver, SameQParamsAsPyTorch) {
  auto cases = test::fixture_json("observers.json");
  c10::IValue input_file = io::load_value(test::fixture("observer_inputs.pt"));
  c10::IValue histogram_file = io::load_value(test::fixture("observer_histograms.pt"));
  auto inputs = input_file.toListRef();
  auto histograms = histogram_file.toListRef();
  ASSERT_GT(cases.size(), 250u);
  test::WarningCapture quiet;
  for (const auto& c : cases) {
    std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(name);
    auto observer = spec_from_json(c["spec"], "spec").make();
    for (const c10::IValue& batch : inputs[c["input"].get<size_t>()].toListRef()) observer->forward(batch.toTensor());
    QParams q = observer->calculate_qparams();
    expect_same(doubles(q.scale), expected(c["scale"]), name + " scale");
    expect_same(doubles(q.zero_point), expected(c["zero_point"]), name + " zero_point");
    EXPECT_EQ(ir::dtype_name(q.zero_point.scalar_type()), c["zero_point_dtype"].get<std::string>());
    EXPECT_EQ(q.scale.scalar_type(), at::kFloat);
    auto [min_val, max_val] = stats(*observer);
    expect_same(doubles(min_val), expected(c["min_val"]), name + " min_val");
    expect_same(doubles(max_val), expected(c["max_val"]), name + " max_val");
    if (c.contains("histogram")) {
      const at::Tensor& theirs = histograms[c["histogram"].get<size_t>()].toTensor();
      EXPECT_TRUE(at::equal(dynamic_cast<HistogramObserverImpl&>(*observer).histogram, theirs)) << name;
    }
  }
}

TEST(OracleObserver, NonFiniteValuesWarnOnceAndAreLeftOut) {
  c10::IValue input_file = io::load_value(test::fixture("observer_inputs.pt"));
  auto inputs = input_file.toListRef();
  auto cases = test::fixture_json("observers.json");
  for (const char* observer_name : {"minmax/with_nan", "histogram/with_nan", "moving_avg/with_nan"}) {
    auto c = *std::find_if(cases.begin(), cases.end(), [&](const auto& x) { return x["name"] == observer_name; });
    auto observer = spec_from_json(c["spec"], "spec").make();
    test::WarningCapture warnings;
    for (const c10::IValue& batch : inputs[c["input"].get<size_t>()].toListRef()) observer->forward(batch.toTensor());
    ASSERT_EQ(warnings.messages().size(), 1u) << observer_name;
    EXPECT_NE(warnings.messages()[0].find("non-finite"), std::string::npos) << warnings.messages()[0];
  }
}

}  // namespace
}  // namespace qfx::quant
