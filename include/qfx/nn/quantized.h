#pragma once
/// \file
/// Quantized modules, as lowering produces them (`torch.ao.nn.quantized`,
/// `.dynamic`, `torch.ao.nn.intrinsic.quantized`): each holds PyTorch's
/// attributes (`_packed_params`, `scale`, `zero_point`, `weight`, ...) and
/// calls one LibTorch quantized kernel (`quantized::linear`,
/// `quantized::conv2d_relu`, ...) with prepacked weights for the current
/// engine (`onednn` or `qnnpack`).
///
/// \code
///   // a reference Linear (reference.h) and its output qparams
///   auto q = qfx::nn::quantized_from_reference("torch.ao.nn.quantized.Linear", *ref, {{0.02, 64}});
///   at::Tensor y = q->forward({at::quantize_per_tensor(x, 0.05, 128, at::kQUInt8)}).toTensor();
/// \endcode

#include "qfx/nn/clone.h"
#include "qfx/nn/float_modules.h"
#include "qfx/quant/qconfig.h"

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qfx::nn {

/// One argument of the op a quantized module calls: a forward input, a
/// constant, or one of the module's attributes.
struct CallArg {
  enum class Kind { kInput, kOptionalInput, kConstant, kAttribute };
  Kind kind = Kind::kInput;
  size_t input = 0;       ///< kInput, kOptionalInput: the forward input's position
  c10::IValue constant;   ///< kConstant
  std::string attribute;  ///< kAttribute: the attribute's name

  /// Forward input `index`.
  static CallArg in(size_t index) { return {Kind::kInput, index, {}, {}}; }
  /// Forward input `index`, None when the caller does not give it.
  static CallArg optional_in(size_t index) { return {Kind::kOptionalInput, index, {}, {}}; }
  /// A constant (`False`, `0`, `None`).
  static CallArg value(c10::IValue constant) { return {Kind::kConstant, 0, std::move(constant), {}}; }
  /// The module's attribute `name` (`_packed_params`, `scale`).
  static CallArg attr(std::string name) { return {Kind::kAttribute, 0, {}, std::move(name)}; }
  /// True for forward input 0, the tensor a module pads first.
  bool is_first_input() const { return kind == Kind::kInput && input == 0; }
};

/// The op a quantized module's forward calls, and its arguments: one
/// description that forward runs and the TorchScript export writes out.
struct QuantizedCall {
  std::string op;        ///< schema name, `quantized::linear`; empty: forward returns input 0
  std::string overload;  ///< `new` for `quantized::conv2d.new`, else empty
  std::vector<CallArg> args;
};

/// A module's attributes in PyTorch's order, by name.
using QuantizedAttributes = std::vector<std::pair<std::string, c10::IValue>>;

/// What every quantized module shares: PyTorch's attributes and the one
/// quantized op its forward calls. The weighted classes are QuantizedImpl
/// below; the others (BatchNorm2d, ELU, LayerNorm, ...) differ only in their
/// op and attributes and are rows of one table. Tensor attributes are also
/// registered as buffers.
/// A conv whose `padding_mode` attribute is not "zeros" pads its input with
/// `_reversed_padding_repeated_twice` first, as PyTorch's quantized convs.
class QuantizedModuleImpl : public torch::nn::Module {
 public:
  QuantizedModuleImpl(std::string type_name, QuantizedCall call, QuantizedAttributes attributes,
                      std::string extra_repr);
  /// A deep copy: tensors cloned, packed weights rebuilt from their state.
  QuantizedModuleImpl(const QuantizedModuleImpl& other, DeepCopy);

  /// Runs the op on `inputs` (quantized tensors, or float for dynamic modules).
  c10::IValue forward(const std::vector<c10::IValue>& inputs);

  /// PyTorch's class, `torch.ao.nn.quantized.Conv2d`.
  const std::string& type_name() const { return type_name_; }
  const QuantizedCall& call() const { return call_; }
  const QuantizedAttributes& attributes() const { return attributes_; }
  /// The attribute `name`; c10::Error naming it if there is none.
  const c10::IValue& attribute(const std::string& name) const;
  /// Python's extra_repr.
  const std::string& extra_repr() const { return extra_repr_; }

 private:
  c10::IValue argument(const CallArg& arg, const std::vector<c10::IValue>& inputs) const;
  /// The op's arguments for `inputs` (padded first for a non-zeros padding mode).
  std::vector<c10::IValue> call_arguments(const std::vector<c10::IValue>& inputs) const;
  /// LibTorch 1.13's onednn quantized convolution reorders its packed
  /// weights in place for the input shape and thread count of its first run;
  /// on CPUs with AVX-512 VNNI a run with another shape or thread count can
  /// fail to reorder them again ("could not create a primitive descriptor for
  /// a reorder primitive"; PyTorch 2.0 goes through the plain layout). Then
  /// forward prepacks the convolution's weights anew from its packed params
  /// and runs once more; false when the module holds no convolution.
  bool repack_convolution();

  std::string type_name_;
  QuantizedCall call_;
  QuantizedAttributes attributes_;
  std::string extra_repr_;
};

/// The qparams of a static module's output.
struct OutputQParams {
  double scale = 1.0;
  int64_t zero_point = 0;
};

/// PyTorch's `from_reference`: the quantized module of class
/// `quantized_type` from `source` — a reference module (Linear, Conv*,
/// ConvTranspose1d/2d, Embedding, EmbeddingBag), a fused module around one
/// (LinearReLU, ConvReLU*d), or a float module lowering swaps directly
/// (BatchNorm2d/3d, BNReLU2d/3d, ELU, LeakyReLU, Hardswish, InstanceNorm*d,
/// LayerNorm, Dropout, Softmax). Static modules take `output`; dynamic and
/// weight-only ones ignore it. c10::Error says why when `source` cannot
/// become that module (e.g. its kernel or prepack is missing on this engine).
std::shared_ptr<QuantizedModuleImpl> quantized_from_reference(const std::string& quantized_type,
                                                              const torch::nn::Module& source,
                                                              std::optional<OutputQParams> output);

/// PyTorch's `from_float` (the eager-mode path): the quantized module of
/// class `quantized_type` from a float or fused module. Its weight is
/// quantized with a fresh `qconfig.weight` observer that has seen it (a
/// reference module first, then from_reference); `output` is the output's
/// qparams (PyTorch reads them from the module's activation_post_process;
/// dynamic and weight-only modules ignore them). Modules without a weight
/// (BatchNorm2d, ELU, ...) go to from_reference as they are.
std::shared_ptr<QuantizedModuleImpl> quantized_from_float(const std::string& quantized_type,
                                                          const std::shared_ptr<torch::nn::Module>& float_module,
                                                          const quant::QConfig& qconfig,
                                                          std::optional<OutputQParams> output);

/// How a weighted quantized class quantizes.
enum class QuantizedMode {
  kStatic,       ///< quantized.Linear, Conv2d, ConvTranspose2d: quantized input and output
  kStaticReLU,   ///< intrinsic.quantized.LinearReLU, ConvReLU2d
  kDynamic,      ///< quantized.dynamic.Linear: float input, activations quantized per call
  kDynamicReLU,  ///< intrinsic.quantized.dynamic.LinearReLU
  kWeightOnly,   ///< quantized.Embedding, EmbeddingBag
};

/// The weighted quantized class of float class `FloatImpl` in `Mode`, one
/// per PyTorch class (`QuantizedConvReLU2d` is
/// `torch.ao.nn.intrinsic.quantized.ConvReLU2d`).
template <typename FloatImpl, QuantizedMode Mode>
class QuantizedImpl final : public QuantizedModuleImpl {
 public:
  using QuantizedModuleImpl::QuantizedModuleImpl;

  /// PyTorch's `from_reference`: from a reference module of `FloatImpl` (or
  /// the fused module around one, for the ReLU classes), its weight
  /// quantized with the reference's qparams and prepacked for the current
  /// engine; `output` is the output's qparams (static classes only).
  static std::shared_ptr<QuantizedImpl> from_reference(const torch::nn::Module& reference,
                                                       std::optional<OutputQParams> output = std::nullopt);
  /// PyTorch's `from_float` (eager mode): from a float `FloatImpl` (or its
  /// fused module), its weight observed by `qconfig.weight`.
  static std::shared_ptr<QuantizedImpl> from_float(const std::shared_ptr<torch::nn::Module>& float_module,
                                                   const quant::QConfig& qconfig,
                                                   std::optional<OutputQParams> output = std::nullopt);

  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override {
    return clone_through<QuantizedImpl>(static_cast<const QuantizedModuleImpl&>(*this), device);
  }
};

using QuantizedLinearImpl = QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kStatic>;
using QuantizedLinearReLUImpl = QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kStaticReLU>;
using DynamicQuantizedLinearImpl = QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kDynamic>;
using DynamicQuantizedLinearReLUImpl = QuantizedImpl<torch::nn::LinearImpl, QuantizedMode::kDynamicReLU>;
using QuantizedConv1dImpl = QuantizedImpl<torch::nn::Conv1dImpl, QuantizedMode::kStatic>;
using QuantizedConv2dImpl = QuantizedImpl<torch::nn::Conv2dImpl, QuantizedMode::kStatic>;
using QuantizedConv3dImpl = QuantizedImpl<torch::nn::Conv3dImpl, QuantizedMode::kStatic>;
using QuantizedConvReLU1dImpl = QuantizedImpl<torch::nn::Conv1dImpl, QuantizedMode::kStaticReLU>;
using QuantizedConvReLU2dImpl = QuantizedImpl<torch::nn::Conv2dImpl, QuantizedMode::kStaticReLU>;
using QuantizedConvReLU3dImpl = QuantizedImpl<torch::nn::Conv3dImpl, QuantizedMode::kStaticReLU>;
using QuantizedConvTranspose1dImpl = QuantizedImpl<torch::nn::ConvTranspose1dImpl, QuantizedMode::kStatic>;
using QuantizedConvTranspose2dImpl = QuantizedImpl<torch::nn::ConvTranspose2dImpl, QuantizedMode::kStatic>;
using QuantizedEmbeddingImpl = QuantizedImpl<torch::nn::EmbeddingImpl, QuantizedMode::kWeightOnly>;
using QuantizedEmbeddingBagImpl = QuantizedImpl<torch::nn::EmbeddingBagImpl, QuantizedMode::kWeightOnly>;
TORCH_MODULE(QuantizedLinear);
TORCH_MODULE(QuantizedLinearReLU);
TORCH_MODULE(DynamicQuantizedLinear);
TORCH_MODULE(DynamicQuantizedLinearReLU);
TORCH_MODULE(QuantizedConv1d);
TORCH_MODULE(QuantizedConv2d);
TORCH_MODULE(QuantizedConv3d);
TORCH_MODULE(QuantizedConvReLU1d);
TORCH_MODULE(QuantizedConvReLU2d);
TORCH_MODULE(QuantizedConvReLU3d);
TORCH_MODULE(QuantizedConvTranspose1d);
TORCH_MODULE(QuantizedConvTranspose2d);
TORCH_MODULE(QuantizedEmbedding);
TORCH_MODULE(QuantizedEmbeddingBag);

/// The quantized module classes qfx has, sorted.
std::vector<std::string> quantized_module_types();

/// A quantized Linear's weight and bias (undefined when it has none), unpacked
/// from its `_packed_params` (`quantized::linear_unpack`).
std::pair<at::Tensor, at::Tensor> unpack_linear(const QuantizedModuleImpl& linear);

/// On the onednn engine, the weight of a pointwise convolution (kernel 1,
/// stride 1, no padding, one group, not transposed) from its packed params,
/// prepacked for `quantized::linear`, which computes the same integers over
/// the channel dimension; nullopt for any other convolution or engine.
/// LibTorch 1.13's onednn convolution fails when a pointwise one runs with a
/// thread count or batch size other than its first run's, and TorchScript
/// cannot read the thread count: the TorchScript export writes these
/// convolutions as linear.
/// \code
///   if (auto w = qfx::nn::pointwise_linear_weight(conv->attribute("_packed_params")))
///     y = quantized::linear(x.permute({0, 2, 3, 1}), *w, scale, zero_point).permute({0, 3, 1, 2});
/// \endcode
std::optional<c10::IValue> pointwise_linear_weight(const c10::IValue& conv_packed);

}  // namespace qfx::nn
