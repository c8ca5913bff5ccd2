// QuantizedModuleImpl: attributes plus one quantized op call, and the
// registry rows of every quantized module class.

#include "qfx/nn/quantized.h"

#include "module_kinds.h"
#include "quantized_kinds.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <exception>
#include <typeindex>
#include <string>
#include <utility>

namespace qfx::nn {
namespace {

/// A quantized module class: its PyTorch name, the name it prints under,
/// its C++ class and how to make one from its constructor's arguments.
struct QuantizedClass {
  const char* type_name;
  const char* display_name;
  std::type_index type;
  std::shared_ptr<QuantizedModuleImpl> (*make)(std::string, QuantizedCall, QuantizedAttributes, std::string);
};

template <typename Impl>
QuantizedClass row(const char* type_name, const char* display_name) {
  auto make = [](std::string type, QuantizedCall call, QuantizedAttributes attributes,
                 std::string extra_repr) -> std::shared_ptr<QuantizedModuleImpl> {
    return std::make_shared<Impl>(std::move(type), std::move(call), std::move(attributes), std::move(extra_repr));
  };
  return {type_name, display_name, typeid(Impl), make};
}

/// One C++ class per row of the classes that differ only in their op and
/// attributes (BatchNorm2d, ELU, ...): the registry tells classes apart by
/// C++ type.
template <size_t Index>
class Unary final : public QuantizedModuleImpl {
 public:
  using QuantizedModuleImpl::QuantizedModuleImpl;
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<Unary>(static_cast<const QuantizedModuleImpl&>(*this), device);
  }
};

const std::vector<QuantizedClass>& quantized_classes() {
  static const std::vector<QuantizedClass> kClasses = {
      row<QuantizedLinearImpl>("torch.ao.nn.quantized.Linear", "QuantizedLinear"),
      row<QuantizedConv1dImpl>("torch.ao.nn.quantized.Conv1d", "QuantizedConv1d"),
      row<QuantizedConv2dImpl>("torch.ao.nn.quantized.Conv2d", "QuantizedConv2d"),
      row<QuantizedConv3dImpl>("torch.ao.nn.quantized.Conv3d", "QuantizedConv3d"),
      row<QuantizedConvTranspose1dImpl>("torch.ao.nn.quantized.ConvTranspose1d", "QuantizedConvTranpose1d"),
      row<QuantizedConvTranspose2dImpl>("torch.ao.nn.quantized.ConvTranspose2d", "QuantizedConvTranpose2d"),
      row<Unary<0>>("torch.ao.nn.quantized.BatchNorm2d", "QuantizedBatchNorm2d"),
      row<Unary<1>>("torch.ao.nn.quantized.BatchNorm3d", "QuantizedBatchNorm3d"),
      row<Unary<2>>("torch.ao.nn.quantized.ELU", "QuantizedELU"),
      row<Unary<3>>("torch.ao.nn.quantized.LeakyReLU", "QuantizedLeakyReLU"),
      row<Unary<4>>("torch.ao.nn.quantized.Hardswish", "QuantizedHardswish"),
      row<Unary<5>>("torch.ao.nn.quantized.InstanceNorm1d", "QuantizedInstanceNorm1d"),
      row<Unary<6>>("torch.ao.nn.quantized.InstanceNorm2d", "QuantizedInstanceNorm2d"),
      row<Unary<7>>("torch.ao.nn.quantized.InstanceNorm3d", "QuantizedInstanceNorm3d"),
      row<Unary<8>>("torch.ao.nn.quantized.LayerNorm", "QuantizedLayerNorm"),
      row<Unary<9>>("torch.ao.nn.quantized.Dropout", "QuantizedDropout"),
      row<Unary<10>>("torch.ao.nn.quantized.Softmax", "QuantizedSoftmax"),
      row<QuantizedEmbeddingImpl>("torch.ao.nn.quantized.Embedding", "QuantizedEmbedding"),
      row<QuantizedEmbeddingBagImpl>("torch.ao.nn.quantized.EmbeddingBag", "QuantizedEmbeddingBag"),
      row<QuantizedLinearReLUImpl>("torch.ao.nn.intrinsic.quantized.LinearReLU", "QuantizedLinearReLU"),
      row<QuantizedConvReLU1dImpl>("torch.ao.nn.intrinsic.quantized.ConvReLU1d", "QuantizedConvReLU1d"),
      row<QuantizedConvReLU2dImpl>("torch.ao.nn.intrinsic.quantized.ConvReLU2d", "QuantizedConvReLU2d"),
      row<QuantizedConvReLU3dImpl>("torch.ao.nn.intrinsic.quantized.ConvReLU3d", "QuantizedConvReLU3d"),
      row<Unary<11>>("torch.ao.nn.intrinsic.quantized.BNReLU2d", "QuantizedBNReLU2d"),
      row<Unary<12>>("torch.ao.nn.intrinsic.quantized.BNReLU3d", "QuantizedBNReLU3d"),
      row<DynamicQuantizedLinearImpl>("torch.ao.nn.quantized.dynamic.Linear", "DynamicQuantizedLinear"),
      row<DynamicQuantizedLinearReLUImpl>("torch.ao.nn.intrinsic.quantized.dynamic.LinearReLU",
                                          "DynamicQuantizedLinearReLU"),
  };
  return kClasses;
}

/// The PyTorch name of C++ class `type`.
const char* class_name_of(const std::type_info& type) {
  for (const QuantizedClass& c : quantized_classes()) {
    if (c.type == type) return c.type_name;
  }
  TORCH_CHECK(false, "no quantized module class for ", type.name());
}

c10::IValue quantized_forward(torch::nn::Module& m, std::vector<c10::IValue>& in) {
  return dynamic_cast<QuantizedModuleImpl&>(m).forward(in);
}

}  // namespace

void register_quantized_kinds() {
  auto extra_repr = [](const torch::nn::Module& m) { return detail::as<QuantizedModuleImpl>(m).extra_repr(); };
  for (const QuantizedClass& c : quantized_classes()) {
    ir::ModuleRegistry::instance().add({c.type_name, c.type, &quantized_forward, extra_repr, c.display_name});
  }
}

template <typename FloatImpl, QuantizedMode Mode>
std::shared_ptr<QuantizedImpl<FloatImpl, Mode>> QuantizedImpl<FloatImpl, Mode>::from_reference(
    const torch::nn::Module& reference, std::optional<OutputQParams> output) {
  return std::static_pointer_cast<QuantizedImpl>(
      quantized_from_reference(class_name_of(typeid(QuantizedImpl)), reference, output));
}

template <typename FloatImpl, QuantizedMode Mode>
std::shared_ptr<QuantizedImpl<FloatImpl, Mode>> QuantizedImpl<FloatImpl, Mode>::from_float(
    const std::shared_ptr<torch::nn::Module>& float_module, const quant::QConfig& qconfig,
    std::optional<OutputQParams> output) {
  return std::static_pointer_cast<QuantizedImpl>(
      quantized_from_float(class_name_of(typeid(QuantizedImpl)), float_module, qconfig, output));
}

template class QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kStatic>;
template class QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kStaticReLU>;
template class QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kDynamic>;
template class QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kDynamicReLU>;
template class QuantizedImpl<torch::nn::Conv1dImpl, QuantizedMode::kStatic>;
template class QuantizedImpl<torch::nn::Conv2dImpl, QuantizedMode::kStatic>;
template class QuantizedImpl<torch::nn::Conv3dImpl, QuantizedMode::kStatic>;
template class QuantizedImpl<torch::nn::Conv1dImpl, QuantizedMode::kStaticReLU>;
template class QuantizedImpl<torch::nn::Conv2dImpl, QuantizedMode::kStaticReLU>;
template class QuantizedImpl<torch::nn::Conv3dImpl, QuantizedMode::kStaticReLU>;
template class QuantizedImpl<torch::nn::ConvTranspose1dImpl, QuantizedMode::kStatic>;
template class QuantizedImpl<torch::nn::ConvTranspose2dImpl, QuantizedMode::kStatic>;
template class QuantizedImpl<torch::nn::EmbeddingImpl, QuantizedMode::kWeightOnly>;
template class QuantizedImpl<torch::nn::EmbeddingBagImpl, QuantizedMode::kWeightOnly>;

namespace {

// onednn's failure to reorder packed weights into another blocked layout
// (a dnnl::error, which LibTorch passes on as it is).
bool is_reorder_failure(const std::exception& e) {
  return std::string(e.what()).find("could not create a primitive descriptor for a reorder primitive") !=
         std::string::npos;
}

// "2d" / "3d" of a convolution's packed params, "" for anything else.
std::string conv_packed_dims(const c10::IValue& packed) {
  const std::string type = packed.type()->str();
  for (const char* dims : {"2d", "3d"}) {
    if (type == std::string("__torch__.torch.classes.quantized.Conv") + dims + "PackedParamsBase") return dims;
  }
  return "";
}

// The convolution's packed params prepacked anew from their own weight,
// bias and settings (as TorchScript's __setstate__ does).
c10::IValue repacked_conv(const c10::IValue& packed, const std::string& dims) {
  const std::string prefix = "quantized::conv" + dims + "_";
  auto ask = [&](const std::string& what) { return detail::call_op((prefix + what).c_str(), "", {packed}); };
  std::vector<c10::IValue> unpacked = detail::call_op_returning_all((prefix + "unpack").c_str(), "", {packed});
  TORCH_CHECK(unpacked.size() == 2, "quantized::conv", dims, "_unpack returned ", unpacked.size(), " values");
  const bool transposed = ask("transpose").toInt() != 0;
  return detail::prepack_conv(dims, transposed, unpacked[0], unpacked[1],
                              {ask("stride"), ask("padding"), transposed ? ask("output_padding") : c10::IValue(),
                               ask("dilation"), ask("groups")});
}

}  // namespace

namespace detail {

std::shared_ptr<QuantizedModuleImpl> make_quantized(const std::string& type_name, QuantizedCall call,
                                                    QuantizedAttributes attributes, std::string extra_repr) {
  for (const QuantizedClass& c : quantized_classes()) {
    if (type_name == c.type_name)
      return c.make(type_name, std::move(call), std::move(attributes), std::move(extra_repr));
  }
  TORCH_CHECK(false, "no quantized module class ", type_name);
}

std::vector<c10::IValue> call_op_returning_all(const char* name, const char* overload, std::vector<c10::IValue> args) {
  c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  op.callBoxed(&args);
  return args;
}

c10::IValue call_op(const char* name, const char* overload, std::vector<c10::IValue> args) {
  std::vector<c10::IValue> out = call_op_returning_all(name, overload, std::move(args));
  TORCH_CHECK(out.size() == 1, name, " returned ", out.size(), " values");
  return std::move(out[0]);
}

c10::IValue prepack_conv(const std::string& dims, bool transposed, const c10::IValue& weight, const c10::IValue& bias,
                         const ConvPrepackSettings& s) {
  if (transposed) {
    return call_op(("quantized::conv_transpose" + dims + "_prepack").c_str(), "",
                   {weight, bias, s.stride, s.padding, s.output_padding, s.dilation, s.groups});
  }
  return call_op(("quantized::conv" + dims + "_prepack").c_str(), "",
                 {weight, bias, s.stride, s.padding, s.dilation, s.groups});
}

}  // namespace detail

QuantizedModuleImpl::QuantizedModuleImpl(std::string type_name, QuantizedCall call, QuantizedAttributes attributes,
                                         std::string extra_repr)
    : type_name_(std::move(type_name)),
      call_(std::move(call)),
      attributes_(std::move(attributes)),
      extra_repr_(std::move(extra_repr)) {
  for (const auto& [name, value] : attributes_) {
    if (value.isTensor()) register_buffer(name, value.toTensor());
  }
  for (const CallArg& arg : call_.args) {
    TORCH_CHECK(
        arg.kind != CallArg::Kind::kAttribute || std::any_of(attributes_.begin(), attributes_.end(),
                                                             [&](const auto& kv) { return kv.first == arg.attribute; }),
        type_name_, ": the call names attribute '", arg.attribute, "', which the module lacks");
  }
}

namespace {

QuantizedAttributes copy_attributes(const QuantizedAttributes& attributes) {
  QuantizedAttributes copies;
  for (const auto& [name, value] : attributes) copies.emplace_back(name, value.deepcopy());
  return copies;
}

}  // namespace

QuantizedModuleImpl::QuantizedModuleImpl(const QuantizedModuleImpl& other, DeepCopy)
    : QuantizedModuleImpl(other.type_name_, other.call_, copy_attributes(other.attributes_), other.extra_repr_) {
  train(other.is_training());
}

const c10::IValue& QuantizedModuleImpl::attribute(const std::string& name) const {
  for (const auto& [key, value] : attributes_) {
    if (key == name) return value;
  }
  TORCH_CHECK(false, type_name_, " has no attribute '", name, "'");
}

c10::IValue QuantizedModuleImpl::argument(const CallArg& arg, const std::vector<c10::IValue>& inputs) const {
  switch (arg.kind) {
    case CallArg::Kind::kConstant: return arg.constant;
    case CallArg::Kind::kAttribute: return attribute(arg.attribute);
    case CallArg::Kind::kOptionalInput: return arg.input < inputs.size() ? inputs[arg.input] : c10::IValue();
    case CallArg::Kind::kInput: break;
  }
  TORCH_CHECK(arg.input < inputs.size(), type_name_, " takes at least ", arg.input + 1, " input(s), got ",
              inputs.size());
  return inputs[arg.input];
}

std::vector<c10::IValue> QuantizedModuleImpl::call_arguments(const std::vector<c10::IValue>& inputs) const {
  std::vector<c10::IValue> args;
  args.reserve(call_.args.size());
  for (const CallArg& arg : call_.args) args.push_back(argument(arg, inputs));
  for (const auto& [name, value] : attributes_) {
    if (name != "padding_mode" || value.toStringRef() == "zeros") continue;
    at::Tensor padded =
        at::pad(inputs[0].toTensor(), attribute("_reversed_padding_repeated_twice").toIntVector(), value.toStringRef());
    for (size_t i = 0; i < call_.args.size(); ++i) {
      if (call_.args[i].is_first_input()) args[i] = padded;
    }
  }
  return args;
}

c10::IValue QuantizedModuleImpl::forward(const std::vector<c10::IValue>& inputs) {
  TORCH_CHECK(!inputs.empty() && inputs[0].isTensor(), type_name_, " takes a tensor input");
  if (call_.op.empty()) {
    std::vector<c10::IValue> args = call_arguments(inputs);
    return args.empty() ? inputs[0] : args[0];
  }
  try {
    return detail::call_op(call_.op.c_str(), call_.overload.c_str(), call_arguments(inputs));
  } catch (const std::exception& e) {
    if (!is_reorder_failure(e) || !repack_convolution()) throw;
  }
  return detail::call_op(call_.op.c_str(), call_.overload.c_str(), call_arguments(inputs));
}

bool QuantizedModuleImpl::repack_convolution() {
  for (auto& [name, value] : attributes_) {
    if (name != "_packed_params") continue;
    const std::string dims = conv_packed_dims(value);
    if (dims.empty()) return false;
    value = repacked_conv(value, dims);
    return true;
  }
  return false;
}

std::pair<at::Tensor, at::Tensor> unpack_linear(const QuantizedModuleImpl& linear) {
  std::vector<c10::IValue> wb =
      detail::call_op_returning_all("quantized::linear_unpack", "", {linear.attribute("_packed_params")});
  TORCH_CHECK(wb.size() == 2, "quantized::linear_unpack returned ", wb.size(), " values");
  return {wb[0].toTensor(), wb[1].isNone() ? at::Tensor() : wb[1].toTensor()};
}

std::vector<std::string> quantized_module_types() {
  std::vector<std::string> names;
  for (const QuantizedClass& c : quantized_classes()) names.push_back(c.type_name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace qfx::nn
