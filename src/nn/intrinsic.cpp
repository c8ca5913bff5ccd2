// Fused modules (torch.ao.nn.intrinsic): the table of kinds, type checks as in
// the Python constructors, sequential forward, and their registration as
// module kinds and as fused-module constructors of the backend registry.

#include "qfx/nn/intrinsic.h"

#include "qfx/backend/backend_registry.h"
#include "qfx/ir/module_registry.h"
#include "module_kinds.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace qfx::nn {
namespace {

/// The kinds as data: name, module types in order, whether a second input is added.
const std::vector<std::pair<FusedKind, FusedKindInfo>>& kind_table() {
  static const std::vector<std::pair<FusedKind, FusedKindInfo>> kTable = {
      {FusedKind::kConvReLU1d, {"torch.ao.nn.intrinsic.ConvReLU1d", {"torch.nn.Conv1d", "torch.nn.ReLU"}, false}},
      {FusedKind::kConvReLU2d, {"torch.ao.nn.intrinsic.ConvReLU2d", {"torch.nn.Conv2d", "torch.nn.ReLU"}, false}},
      {FusedKind::kConvReLU3d, {"torch.ao.nn.intrinsic.ConvReLU3d", {"torch.nn.Conv3d", "torch.nn.ReLU"}, false}},
      {FusedKind::kConvBn1d, {"torch.ao.nn.intrinsic.ConvBn1d", {"torch.nn.Conv1d", "torch.nn.BatchNorm1d"}, false}},
      {FusedKind::kConvBn2d, {"torch.ao.nn.intrinsic.ConvBn2d", {"torch.nn.Conv2d", "torch.nn.BatchNorm2d"}, false}},
      {FusedKind::kConvBn3d, {"torch.ao.nn.intrinsic.ConvBn3d", {"torch.nn.Conv3d", "torch.nn.BatchNorm3d"}, false}},
      {FusedKind::kConvBnReLU1d,
       {"torch.ao.nn.intrinsic.ConvBnReLU1d", {"torch.nn.Conv1d", "torch.nn.BatchNorm1d", "torch.nn.ReLU"}, false}},
      {FusedKind::kConvBnReLU2d,
       {"torch.ao.nn.intrinsic.ConvBnReLU2d", {"torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"}, false}},
      {FusedKind::kConvBnReLU3d,
       {"torch.ao.nn.intrinsic.ConvBnReLU3d", {"torch.nn.Conv3d", "torch.nn.BatchNorm3d", "torch.nn.ReLU"}, false}},
      {FusedKind::kLinearReLU, {"torch.ao.nn.intrinsic.LinearReLU", {"torch.nn.Linear", "torch.nn.ReLU"}, false}},
      {FusedKind::kLinearBn1d,
       {"torch.ao.nn.intrinsic.LinearBn1d", {"torch.nn.Linear", "torch.nn.BatchNorm1d"}, false}},
      {FusedKind::kBNReLU2d, {"torch.ao.nn.intrinsic.BNReLU2d", {"torch.nn.BatchNorm2d", "torch.nn.ReLU"}, false}},
      {FusedKind::kBNReLU3d, {"torch.ao.nn.intrinsic.BNReLU3d", {"torch.nn.BatchNorm3d", "torch.nn.ReLU"}, false}},
      {FusedKind::kLinearLeakyReLU,
       {"torch.ao.nn.intrinsic.LinearLeakyReLU", {"torch.nn.Linear", "torch.nn.LeakyReLU"}, false}},
      {FusedKind::kLinearTanh, {"torch.ao.nn.intrinsic.LinearTanh", {"torch.nn.Linear", "torch.nn.Tanh"}, false}},
      {FusedKind::kConvAdd2d, {"torch.ao.nn.intrinsic.ConvAdd2d", {"torch.nn.Conv2d"}, true}},
      {FusedKind::kConvAddReLU2d, {"torch.ao.nn.intrinsic.ConvAddReLU2d", {"torch.nn.Conv2d", "torch.nn.ReLU"}, true}},
  };
  return kTable;
}

std::string short_name(const std::string& qualified) { return qualified.substr(qualified.rfind('.') + 1); }

std::string type_list(const std::vector<ModulePtr>& modules) {
  std::string out;
  for (const ModulePtr& m : modules) out += (out.empty() ? "" : ", ") + (m ? ir::module_type_name(*m) : "None");
  return out;
}

std::string type_list(const std::vector<const char*>& types) {
  std::string out;
  for (const char* t : types) out += (out.empty() ? "" : ", ") + std::string(t);
  return out;
}

c10::IValue run(torch::nn::Module& m, c10::IValue input) {
  std::vector<c10::IValue> inputs{std::move(input)};
  const ir::ModuleKind* kind = ir::ModuleRegistry::instance().find(m);
  TORCH_CHECK(kind, "fused module part ", m.name(), " is not a registered module kind");
  return kind->forward(m, inputs);
}

}  // namespace

const FusedKindInfo& fused_kind_info(FusedKind kind) {
  for (const auto& [k, info] : kind_table()) {
    if (k == kind) return info;
  }
  TORCH_CHECK(false, "unknown fused module kind");
}

const std::vector<FusedKind>& fused_kinds() {
  static const std::vector<FusedKind> kKinds = [] {
    std::vector<FusedKind> kinds;
    for (const auto& row : kind_table()) kinds.push_back(row.first);
    return kinds;
  }();
  return kKinds;
}

FusedModuleImpl::FusedModuleImpl(FusedKind kind, std::vector<ModulePtr> modules, std::string add_op)
    : kind_(kind), modules_(std::move(modules)), add_op_(std::move(add_op)) {
  const FusedKindInfo& info = fused_kind_info(kind);
  bool types_match = modules_.size() == info.module_types.size();
  for (size_t i = 0; types_match && i < modules_.size(); ++i) {
    types_match = modules_[i] && ir::module_type_name(*modules_[i]) == info.module_types[i];
  }
  TORCH_CHECK(types_match, "Incorrect types for input modules of ", short_name(info.name), ": got (",
              type_list(modules_), "), expected (", type_list(info.module_types), ")");
  TORCH_CHECK(info.adds_second_input == !add_op_.empty(), short_name(info.name),
              info.adds_second_input ? " needs an add op" : " takes no add op");
  register_modules();
}

FusedModuleImpl::FusedModuleImpl(const FusedModuleImpl& other, DeepCopy) : kind_(other.kind_), add_op_(other.add_op_) {
  for (const ModulePtr& m : other.modules_) modules_.push_back(m->clone());
  register_modules();
  copy_training_modes(other, *this);
}

void FusedModuleImpl::register_modules() {
  for (size_t i = 0; i < modules_.size(); ++i) {
    // Python's ConvAddReLU2d holds its relu as attribute `relu`, not as item 1.
    bool named_relu = fused_kind_info(kind_).adds_second_input && i == 1;
    register_module(named_relu ? "relu" : std::to_string(i), modules_[i]);
  }
}

void FusedModuleImpl::set_module(size_t index, ModulePtr module) {
  TORCH_CHECK(index < modules_.size() && module, "set_module: no module ", index);
  std::string name = fused_kind_info(kind_).adds_second_input && index == 1 ? "relu" : std::to_string(index);
  modules_[index] = replace_module(name, std::move(module));
}

c10::IValue FusedModuleImpl::forward(std::vector<c10::IValue>& inputs) {
  const FusedKindInfo& info = fused_kind_info(kind_);
  size_t arity = info.adds_second_input ? 2 : 1;
  TORCH_CHECK(inputs.size() == arity, short_name(info.name), " takes ", arity, " input(s), got ", inputs.size());
  c10::IValue value = run(*modules_[0], inputs[0]);
  if (info.adds_second_input) {
    TORCH_CHECK(inputs[1].isTensor(), short_name(info.name), ": the second input must be a Tensor");
    value = at::add(value.toTensor(), inputs[1].toTensor());
  }
  for (size_t i = 1; i < modules_.size(); ++i) value = run(*modules_[i], value);
  return value;
}

ModulePtr make_fused_module(FusedKind kind, const std::vector<ModulePtr>& modules, const std::string& add_op) {
  const FusedKindInfo& info = fused_kind_info(kind);
  const std::vector<ModulePtr>& parts = modules;
  // A fused module class per kind, so the registry can tell them apart.
  // clang-format off
  switch (kind) {
#define QFX_FUSED_CASE(Name) \
  case FusedKind::k##Name: return std::make_shared<Name##Impl>(parts);
    QFX_FUSED_CASE(ConvReLU1d) QFX_FUSED_CASE(ConvReLU2d) QFX_FUSED_CASE(ConvReLU3d)
    QFX_FUSED_CASE(ConvBn1d) QFX_FUSED_CASE(ConvBn2d) QFX_FUSED_CASE(ConvBn3d)
    QFX_FUSED_CASE(ConvBnReLU1d) QFX_FUSED_CASE(ConvBnReLU2d) QFX_FUSED_CASE(ConvBnReLU3d)
    QFX_FUSED_CASE(LinearReLU) QFX_FUSED_CASE(LinearBn1d) QFX_FUSED_CASE(BNReLU2d) QFX_FUSED_CASE(BNReLU3d)
    QFX_FUSED_CASE(LinearLeakyReLU) QFX_FUSED_CASE(LinearTanh)
#undef QFX_FUSED_CASE
    case FusedKind::kConvAdd2d:
      TORCH_CHECK(parts.size() == 1, short_name(info.name), " takes a conv and an add op");
      return std::make_shared<ConvAdd2dImpl>(parts[0], add_op);
    case FusedKind::kConvAddReLU2d:
      TORCH_CHECK(parts.size() == 2, short_name(info.name), " takes a conv, an add op and a relu");
      return std::make_shared<ConvAddReLU2dImpl>(parts[0], add_op, parts[1]);
  }
  // clang-format on
  TORCH_CHECK(false, "unknown fused module kind");
}

namespace {

template <typename Impl>
void add_module_kind(const char* name) {
  ir::ModuleRegistry::instance().add(
      {name, typeid(Impl),
       [](torch::nn::Module& m, std::vector<c10::IValue>& in) { return dynamic_cast<Impl&>(m).forward(in); }, nullptr,
       ""});
}

/// The default fuser's constructor: modules in order, ops (the add) by name.
backend::FusedModuleFactory factory_of(FusedKind kind) {
  return [kind](const std::vector<backend::FuserPart>& parts) {
    std::vector<ModulePtr> modules;
    std::string add_op;
    for (const backend::FuserPart& part : parts) {
      if (part.module) {
        modules.push_back(part.module);
      } else if (fused_kind_info(kind).adds_second_input && add_op.empty()) {
        add_op = part.op;
      } else {
        TORCH_CHECK(false, short_name(fused_kind_info(kind).name), " is built from modules; ", part.op,
                    " is not a module");
      }
    }
    return make_fused_module(kind, modules, add_op);
  };
}

}  // namespace

// clang-format off
void register_fused_kinds() {
#define QFX_FUSED_KIND(Name) add_module_kind<Name##Impl>(fused_kind_info(FusedKind::k##Name).name);
  QFX_FUSED_KIND(ConvReLU1d) QFX_FUSED_KIND(ConvReLU2d) QFX_FUSED_KIND(ConvReLU3d)
  QFX_FUSED_KIND(ConvBn1d) QFX_FUSED_KIND(ConvBn2d) QFX_FUSED_KIND(ConvBn3d)
  QFX_FUSED_KIND(ConvBnReLU1d) QFX_FUSED_KIND(ConvBnReLU2d) QFX_FUSED_KIND(ConvBnReLU3d)
  QFX_FUSED_KIND(LinearReLU) QFX_FUSED_KIND(LinearBn1d) QFX_FUSED_KIND(BNReLU2d) QFX_FUSED_KIND(BNReLU3d)
  QFX_FUSED_KIND(LinearLeakyReLU) QFX_FUSED_KIND(LinearTanh) QFX_FUSED_KIND(ConvAdd2d) QFX_FUSED_KIND(ConvAddReLU2d)
#undef QFX_FUSED_KIND
  for (FusedKind kind : fused_kinds()) {
    backend::BackendRegistry::instance().add_fused_module(fused_kind_info(kind).name, factory_of(kind));
  }
}
// clang-format on

}  // namespace qfx::nn
