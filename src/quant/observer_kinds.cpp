// Every observer and fake-quantize class, registered twice: as a module kind
// (PyTorch name, forward, extra_repr) so GraphModules can hold and run it,
// and as an ObserverSpec factory that reads PyTorch's constructor arguments.

#include "qfx/ir/module_registry.h"
#include "qfx/ir/python_literals.h"
#include "qfx/quant/calibration_observers.h"
#include "qfx/quant/fake_quantize.h"
#include "qfx/quant/histogram_observer.h"
#include "qfx/quant/min_max_observers.h"
#include "qfx/quant/simple_observers.h"

#include <ATen/ATen.h>

namespace qfx::quant {
namespace {

constexpr const char* kObserverModule = "torch.ao.quantization.observer.";
constexpr const char* kFakeQuantModule = "torch.ao.quantization.fake_quantize.";
constexpr const char* kQfxObserverModule = "qfx.observer.";

// Python's str() of a small tensor: `tensor([1.0000, 0.5000])`,
// `tensor([1], dtype=torch.uint8)`; 0-dim floats print as numbers.
std::string tensor_str(const at::Tensor& t) {
  if (t.dim() == 0 && t.is_floating_point()) return ir::python_float_repr(t.item<double>());
  at::Tensor flat = t.reshape({-1}).to(at::kDouble);
  bool integral = at::all(at::eq(flat, at::round(flat)) | at::isinf(flat)).item<bool>();
  std::string items;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    double v = flat[i].item<double>();
    char buf[48];
    if (std::isinf(v))
      std::snprintf(buf, sizeof(buf), "%s", v > 0 ? "inf" : "-inf");
    else if (!t.is_floating_point())
      std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v));
    else if (integral)
      std::snprintf(buf, sizeof(buf), "%.0f.", v);
    else
      std::snprintf(buf, sizeof(buf), "%.4f", v);
    items += (i ? ", " : "") + std::string(buf);
  }
  bool default_dtype = t.scalar_type() == at::kFloat || t.scalar_type() == at::kLong;
  return "tensor([" + items + "]" + (default_dtype ? "" : ", dtype=" + ir::dtype_name(t.scalar_type())) + ")";
}

template <typename Impl>
const Impl& as(const torch::nn::Module& m) {
  return dynamic_cast<const Impl&>(m);
}

c10::IValue run(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  TORCH_CHECK(in.size() == 1 && in[0].isTensor(), "observers take one Tensor input, got ", in.size(), " input(s)");
  return dynamic_cast<ActivationPostProcess&>(m).forward(in[0].toTensor());
}

/// Registers a kind; `observer` for those whose forward only reads its input
/// (the interpreter may run them on its observer thread).
template <typename Impl>
void add_module_kind(const std::string& name, ir::ModuleExtraRepr extra_repr, bool observer = false) {
  ir::ModuleKind kind{name, typeid(Impl), run, std::move(extra_repr), ""};
  kind.observer = observer;
  ir::ModuleRegistry::instance().add(std::move(kind));
}

template <typename Impl>
std::string min_max_repr(const torch::nn::Module& m) {
  const auto& o = as<Impl>(m);
  return "min_val=" + tensor_str(o.min_val) + ", max_val=" + tensor_str(o.max_val);
}

std::string no_repr(const torch::nn::Module&) { return ""; }

/// A buffer as Python prints it (`tensor([1], dtype=torch.uint8)`).
std::string buffer_str(const torch::nn::Module& m, const char* name) {
  auto buffers = m.named_buffers(false);  // find() points into this dict
  const at::Tensor* t = buffers.find(name);
  return t != nullptr ? tensor_str(*t) : "None";
}

/// FusedMovingAvgObsFakeQuantize.extra_repr.
std::string fused_fake_quant_repr(const torch::nn::Module& m) {
  const auto& fq = as<FusedMovingAvgObsFakeQuantizeImpl>(m);
  auto [quant_min, quant_max] = fq.quant_range();
  auto* observer = dynamic_cast<const UniformObserverBase*>(fq.activation_post_process.get());
  return "fake_quant_enabled=" + buffer_str(m, "fake_quant_enabled") +
         ", observer_enabled=" + buffer_str(m, "observer_enabled") + ", scale=" + tensor_str(fq.scale) +
         ", zero_point=" + tensor_str(fq.zero_point) + ", dtype=" + ir::dtype_name(fq.dtype()) +
         ", quant_min=" + std::to_string(quant_min) + ", quant_max=" + std::to_string(quant_max) +
         ", qscheme=" + qscheme_name(fq.qscheme()) +
         ", reduce_range=" + (observer != nullptr && observer->reduce_range() ? "True" : "False");
}

template <typename Impl>
std::string fake_quant_repr(const torch::nn::Module& m) {
  const auto& fq = as<Impl>(m);
  auto [quant_min, quant_max] = fq.quant_range();
  return "fake_quant_enabled=" + buffer_str(m, "fake_quant_enabled") +
         ", observer_enabled=" + buffer_str(m, "observer_enabled") + ", quant_min=" + std::to_string(quant_min) +
         ", quant_max=" + std::to_string(quant_max) + ", dtype=" + ir::dtype_name(fq.dtype()) +
         ", qscheme=" + qscheme_name(fq.qscheme()) + ", ch_axis=" + std::to_string(fq.ch_axis()) +
         ", scale=" + tensor_str(fq.scale) + ", zero_point=" + tensor_str(fq.zero_point);
}

// The arguments of UniformQuantizationObserverBase.
template <typename Options>
Options read_uniform(SpecReader& r, Options o) {
  o.dtype(r.dtype("dtype", o.dtype())).qscheme(r.qscheme("qscheme", o.qscheme()));
  o.reduce_range(r.boolean("reduce_range", o.reduce_range())).eps(r.real("eps", o.eps()));
  o.quant_min(r.optional_integer("quant_min")).quant_max(r.optional_integer("quant_max"));
  r.text("factory_kwargs", "");  // PyTorch's device placement argument: None only
  return o;
}

template <typename Module, typename Options>
std::shared_ptr<ActivationPostProcess> make(Options options) {
  return std::make_shared<typename Module::Impl>(std::move(options));
}

void add_observers(ObserverRegistry& r) {
  std::string m = kObserverModule;
  r.add(m + "MinMaxObserver",
        [](SpecReader& a) { return make<MinMaxObserver>(read_uniform(a, MinMaxObserverOptions())); });
  r.add(m + "MovingAverageMinMaxObserver", [](SpecReader& a) {
    auto o = MovingAverageMinMaxObserverOptions().averaging_constant(a.real("averaging_constant", 0.01));
    return make<MovingAverageMinMaxObserver>(read_uniform(a, o));
  });
  r.add(m + "PerChannelMinMaxObserver", [](SpecReader& a) {
    auto o = PerChannelMinMaxObserverOptions().ch_axis(a.integer("ch_axis", 0));
    return make<PerChannelMinMaxObserver>(read_uniform(a, o));
  });
  r.add(m + "MovingAveragePerChannelMinMaxObserver", [](SpecReader& a) {
    auto o = MovingAveragePerChannelMinMaxObserverOptions()
                 .averaging_constant(a.real("averaging_constant", 0.01))
                 .ch_axis(a.integer("ch_axis", 0));
    return make<MovingAveragePerChannelMinMaxObserver>(read_uniform(a, o));
  });
  r.add(m + "HistogramObserver", [](SpecReader& a) {
    auto o = HistogramObserverOptions().bins(a.integer("bins", 2048)).upsample_rate(a.integer("upsample_rate", 128));
    return make<HistogramObserver>(read_uniform(a, o));
  });
}

// qfx's calibration observers: bins, percentile, ch_axis and PyTorch's uniform arguments.
template <typename Module>
void add_calibration_observer(ObserverRegistry& r, const char* name) {
  r.add(std::string(kQfxObserverModule) + name, [](SpecReader& a) {
    auto o = CalibrationObserverOptions().bins(a.integer("bins", 2048)).ch_axis(a.integer("ch_axis", 0));
    if (std::is_same_v<Module, PercentileObserver>) o.percentile(a.real("percentile", 99.99));
    return make<Module>(read_uniform(a, o));
  });
}

void add_calibration_observers(ObserverRegistry& r) {
  add_calibration_observer<PercentileObserver>(r, "PercentileObserver");
  add_calibration_observer<EntropyObserver>(r, "EntropyObserver");
  add_calibration_observer<MSEObserver>(r, "MSEObserver");
}

void add_simple_observers(ObserverRegistry& r) {
  std::string m = kObserverModule;
  r.add(m + "PlaceholderObserver", [](SpecReader& a) {
    auto o =
        PlaceholderObserverOptions().dtype(a.dtype("dtype", c10::kFloat)).custom_op_name(a.text("custom_op_name", ""));
    o.compute_dtype(a.optional_dtype("compute_dtype"));
    if (a.boolean("is_dynamic", false)) o.compute_dtype(o.dtype());  // PyTorch 2.x spelling of dynamic
    return make<PlaceholderObserver>(o);
  });
  r.add(m + "FixedQParamsObserver", [](SpecReader& a) {
    TORCH_CHECK(a.has("scale") && a.has("zero_point"), "FixedQParamsObserver needs scale and zero_point");
    auto o = FixedQParamsObserverOptions(a.real("scale", 1.0), a.integer("zero_point", 0));
    o.dtype(a.dtype("dtype", c10::kQUInt8)).qscheme(a.qscheme("qscheme", c10::kPerTensorAffine));
    o.quant_min(a.integer("quant_min", 0)).quant_max(a.integer("quant_max", 255));
    return make<FixedQParamsObserver>(o);
  });
  r.add(m + "NoopObserver", [](SpecReader& a) {
    return make<NoopObserver>(
        NoopObserverOptions().dtype(a.dtype("dtype", c10::kHalf)).custom_op_name(a.text("custom_op_name", "")));
  });
  r.add(m + "ReuseInputObserver", [](SpecReader&) { return std::make_shared<ReuseInputObserverImpl>(); });
  r.add(m + "RecordingObserver", [](SpecReader& a) {
    return make<RecordingObserver>(RecordingObserverOptions().dtype(a.dtype("dtype", c10::kQUInt8)));
  });
}

void add_fake_quantizers(ObserverRegistry& r) {
  std::string m = kFakeQuantModule;
  r.add(m + "FakeQuantize", [](SpecReader& a) {
    ObserverSpec observer = a.spec("observer", ObserverSpec("MovingAverageMinMaxObserver"));
    auto o =
        FakeQuantizeOptions().quant_min(a.optional_integer("quant_min")).quant_max(a.optional_integer("quant_max"));
    o.observer(observer.with_args(a.rest()));
    return make<FakeQuantize>(o);
  });
  r.add(m + "FixedQParamsFakeQuantize", [](SpecReader& a) {
    TORCH_CHECK(a.has("observer"), "FixedQParamsFakeQuantize needs an observer");
    return std::make_shared<FixedQParamsFakeQuantizeImpl>(a.spec("observer", ObserverSpec("FixedQParamsObserver")));
  });
  r.add(m + "FusedMovingAvgObsFakeQuantize", [](SpecReader& a) {
    ObserverSpec observer = a.spec("observer", ObserverSpec("MovingAverageMinMaxObserver"));
    auto o = FusedMovingAvgObsFakeQuantizeOptions()
                 .quant_min(a.integer("quant_min", 0))
                 .quant_max(a.integer("quant_max", 255));
    o.observer(observer.with_args(a.rest()));
    return make<FusedMovingAvgObsFakeQuantize>(o);
  });
  r.add("torch.ao.quantization._learnable_fake_quantize._LearnableFakeQuantize", [](SpecReader& a) {
    ObserverSpec observer = a.spec("observer", ObserverSpec("MovingAverageMinMaxObserver"));
    auto o = LearnableFakeQuantizeOptions(observer);
    o.quant_min(a.integer("quant_min", 0)).quant_max(a.integer("quant_max", 255));
    o.scale(a.real("scale", 1.0)).zero_point(a.real("zero_point", 0.0)).channel_len(a.integer("channel_len", -1));
    o.use_grad_scaling(a.boolean("use_grad_scaling", false));
    o.observer(observer.with_args(a.rest()));
    return make<LearnableFakeQuantize>(o);
  });
}

void add_module_kinds() {
  std::string m = kObserverModule;
  constexpr bool kObserver = true;
  add_module_kind<MinMaxObserverImpl>(m + "MinMaxObserver", min_max_repr<MinMaxObserverImpl>, kObserver);
  add_module_kind<MovingAverageMinMaxObserverImpl>(m + "MovingAverageMinMaxObserver",
                                                   min_max_repr<MovingAverageMinMaxObserverImpl>, kObserver);
  add_module_kind<PerChannelMinMaxObserverImpl>(m + "PerChannelMinMaxObserver",
                                                min_max_repr<PerChannelMinMaxObserverImpl>, kObserver);
  add_module_kind<MovingAveragePerChannelMinMaxObserverImpl>(
      m + "MovingAveragePerChannelMinMaxObserver", min_max_repr<MovingAveragePerChannelMinMaxObserverImpl>, kObserver);
  add_module_kind<HistogramObserverImpl>(m + "HistogramObserver", min_max_repr<HistogramObserverImpl>, kObserver);
  std::string q = kQfxObserverModule;
  add_module_kind<PercentileObserverImpl>(q + "PercentileObserver", min_max_repr<PercentileObserverImpl>, kObserver);
  add_module_kind<EntropyObserverImpl>(q + "EntropyObserver", min_max_repr<EntropyObserverImpl>, kObserver);
  add_module_kind<MSEObserverImpl>(q + "MSEObserver", min_max_repr<MSEObserverImpl>, kObserver);
  add_module_kind<PlaceholderObserverImpl>(m + "PlaceholderObserver", no_repr);
  add_module_kind<FixedQParamsObserverImpl>(m + "FixedQParamsObserver", no_repr);
  add_module_kind<NoopObserverImpl>(m + "NoopObserver", no_repr);
  add_module_kind<ReuseInputObserverImpl>(m + "ReuseInputObserver", no_repr);
  add_module_kind<RecordingObserverImpl>(m + "RecordingObserver", no_repr);
  std::string f = kFakeQuantModule;
  add_module_kind<FakeQuantizeImpl>(f + "FakeQuantize", fake_quant_repr<FakeQuantizeImpl>);
  add_module_kind<FixedQParamsFakeQuantizeImpl>(f + "FixedQParamsFakeQuantize", no_repr);
  add_module_kind<FusedMovingAvgObsFakeQuantizeImpl>(f + "FusedMovingAvgObsFakeQuantize", fused_fake_quant_repr);
  add_module_kind<LearnableFakeQuantizeImpl>("torch.ao.quantization._learnable_fake_quantize._LearnableFakeQuantize",
                                             no_repr);
}

}  // namespace

void register_builtins() {
  ObserverRegistry& r = ObserverRegistry::instance();
  add_observers(r);
  add_calibration_observers(r);
  add_simple_observers(r);
  add_fake_quantizers(r);
  add_module_kinds();
}

}  // namespace qfx::quant
