// GraphModule: dotted-path access to the module tree and attributes. Parents
// created on the way are ContainerImpl modules, which also give O(1) lookup of
// children and tensors by name (LibTorch's public accessors copy the whole
// dict), so large flat graphs stay linear.

#include "qfx/ir/graph_module.h"

#include "qfx/ir/module_registry.h"

#include "builtin_registrations.h"

#include <c10/util/Exception.h>
#include <typeinfo>
#include <unordered_map>
#include <torch/nn/module.h>

namespace qfx::ir {
namespace {

/// A module that only holds children and tensors (Python's `torch.nn.Module()`).
/// Keeps its own name index, since LibTorch's accessors copy whole dicts.
class ContainerImpl final : public torch::nn::Module {
 public:
  ContainerImpl() : Module("torch.nn.Module") {}

  /// Adds or replaces a child; a replaced child keeps its place, as Python's
  /// setattr does (and in O(1): unregistering is linear in LibTorch).
  void set_child(const std::string& name, std::shared_ptr<torch::nn::Module> child) {
    auto [it, fresh] = children_.try_emplace(name);
    it->second = fresh ? register_module(name, std::move(child)) : replace_module(name, std::move(child));
  }
  void remove_child(const std::string& name) {
    unregister_module(name);
    children_.erase(name);
  }
  std::shared_ptr<torch::nn::Module> find_child(const std::string& name) const {
    auto it = children_.find(name);
    return it != children_.end() ? it->second : nullptr;
  }
  void set_tensor(const std::string& name, const at::Tensor& value) {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      tensors_.emplace(name, register_buffer(name, value));
    } else {
      it->second.set_data(value);  // the stored buffer shares this TensorImpl
    }
  }
  const at::Tensor* find_tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    return it != tensors_.end() ? &it->second : nullptr;
  }
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;

 private:
  std::unordered_map<std::string, std::shared_ptr<torch::nn::Module>> children_;
  std::unordered_map<std::string, at::Tensor> tensors_;
};

/// Deep copies of a module tree with a memo, as Python's deepcopy: a module
/// or tensor reached twice is copied once. Containers are copied here,
/// other modules by their clone(), whose tensors are then tied again to
/// copies made before (weights shared between modules stay shared).
class TreeCopier {
 public:
  explicit TreeCopier(c10::optional<torch::Device> device) : device_(std::move(device)) {}

  std::shared_ptr<torch::nn::Module> copy(const std::shared_ptr<torch::nn::Module>& module, const std::string& path) {
    auto done = modules_.find(module.get());
    if (done != modules_.end()) return done->second;
    std::shared_ptr<torch::nn::Module> copy =
        typeid(*module) == typeid(ContainerImpl) ? copy_container(*module, path) : copy_leaf(*module, path);
    modules_.emplace(module.get(), copy);
    return copy;
  }

  /// The copy of `tensor`: made once per tensor.
  at::Tensor copy(const at::Tensor& tensor) {
    auto done = tensors_.find(tensor.unsafeGetTensorImpl());
    if (done != tensors_.end()) return done->second.second;
    at::Tensor copy = device_ ? tensor.to(*device_) : tensor.clone();
    tensors_.emplace(tensor.unsafeGetTensorImpl(), std::make_pair(tensor, copy));
    return copy;
  }

  /// The memo of IValue::deepcopy, with the tensors copied so far.
  c10::IValue::HashAliasedIValueMap value_memo() const {
    c10::IValue::HashAliasedIValueMap memo;
    for (const auto& [impl, pair] : tensors_) memo[pair.first] = pair.second;
    return memo;
  }

 private:
  std::shared_ptr<torch::nn::Module> copy_container(const torch::nn::Module& module, const std::string& path) {
    auto copy = std::make_shared<ContainerImpl>();
    for (const auto& child : module.named_children()) {
      copy->set_child(child.key(), this->copy(child.value(), path.empty() ? child.key() : path + "." + child.key()));
    }
    for (const auto& buffer : module.named_buffers(/*recurse=*/false)) {
      copy->set_tensor(buffer.key(), this->copy(buffer.value()));
    }
    copy->train(module.is_training());
    return copy;
  }

  std::shared_ptr<torch::nn::Module> copy_leaf(const torch::nn::Module& module, const std::string& path) {
    std::shared_ptr<torch::nn::Module> copy;
    try {
      copy = module.clone(device_);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, "cannot copy module '", path, "' (", module_type_name(module),
                  "): ", e.what_without_backtrace());
    }
    tie(module.named_parameters(), copy->named_parameters());
    tie(module.named_buffers(), copy->named_buffers());
    return copy;
  }

  /// Each copied tensor whose original was copied before shares that copy's data.
  void tie(const torch::OrderedDict<std::string, at::Tensor>& originals,
           const torch::OrderedDict<std::string, at::Tensor>& copies) {
    for (const auto& original : originals) {
      const at::Tensor* copy = copies.find(original.key());
      if (copy == nullptr || !copy->defined()) continue;
      auto done = tensors_.find(original.value().unsafeGetTensorImpl());
      if (done == tensors_.end()) {
        tensors_.emplace(original.value().unsafeGetTensorImpl(), std::make_pair(original.value(), *copy));
      } else if (!done->second.second.is_same(*copy)) {
        at::Tensor tied = *copy;
        tied.set_data(done->second.second);
      }
    }
  }

  c10::optional<torch::Device> device_;
  std::unordered_map<const torch::nn::Module*, std::shared_ptr<torch::nn::Module>> modules_;
  /// original -> (original, copy)
  std::unordered_map<const c10::TensorImpl*, std::pair<at::Tensor, at::Tensor>> tensors_;
};

std::shared_ptr<torch::nn::Module> ContainerImpl::clone(const c10::optional<torch::Device>& device) const {
  return TreeCopier(device).copy(std::const_pointer_cast<torch::nn::Module>(shared_from_this()), "");
}

}  // namespace

void register_container_kind() {
  ModuleRegistry::instance().add({"torch.nn.Module", typeid(ContainerImpl),
                                  [](torch::nn::Module&, std::vector<c10::IValue>&) -> c10::IValue {
                                    TORCH_CHECK(false, "torch.nn.Module() has no forward");
                                  },
                                  nullptr, "Module"});
}

namespace {

std::pair<std::string, std::string> split_last(const std::string& path) {
  size_t dot = path.rfind('.');
  if (dot == std::string::npos) return {"", path};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

/// `module` as a ContainerImpl, or null (an exact type test: cheaper than
/// dynamic_cast on lookups that run once per node and pass).
const ContainerImpl* as_container(const torch::nn::Module& module) {
  return typeid(module) == typeid(ContainerImpl) ? static_cast<const ContainerImpl*>(&module) : nullptr;
}

std::shared_ptr<torch::nn::Module> child_of(const torch::nn::Module& parent, const std::string& name) {
  if (const auto* container = as_container(parent)) return container->find_child(name);
  auto children = parent.named_children();
  const auto* child = children.find(name);
  return child != nullptr ? *child : nullptr;
}

/// Adds child `name` to `parent`, or replaces it in place.
void set_child(torch::nn::Module& parent, const std::string& name, std::shared_ptr<torch::nn::Module> child) {
  if (typeid(parent) == typeid(ContainerImpl)) {
    static_cast<ContainerImpl&>(parent).set_child(name, std::move(child));
  } else if (child_of(parent, name) != nullptr) {
    parent.replace_module(name, std::move(child));
  } else {
    parent.register_module(name, std::move(child));
  }
}

std::optional<at::Tensor> tensor_of(const torch::nn::Module& owner, const std::string& name) {
  if (const auto* container = as_container(owner)) {
    const at::Tensor* t = container->find_tensor(name);
    return t != nullptr ? std::optional<at::Tensor>(*t) : std::nullopt;
  }
  auto params = owner.named_parameters(/*recurse=*/false);
  if (const auto* p = params.find(name)) return *p;
  auto buffers = owner.named_buffers(/*recurse=*/false);
  if (const auto* b = buffers.find(name)) return *b;
  return std::nullopt;
}

}  // namespace

std::shared_ptr<torch::nn::Module> make_container_module() { return std::make_shared<ContainerImpl>(); }

GraphModule::GraphModule() : GraphModule(make_container_module(), std::make_unique<Graph>()) {}

GraphModule::GraphModule(std::shared_ptr<torch::nn::Module> root, std::unique_ptr<Graph> graph)
    : root_(std::move(root)), graph_(std::move(graph)) {
  TORCH_CHECK(root_ != nullptr && graph_ != nullptr, "GraphModule: null root or graph");
}

GraphModule::~GraphModule() = default;

std::unique_ptr<GraphModule> GraphModule::deep_copy() const {
  TreeCopier copier(c10::nullopt);
  auto copy = std::make_unique<GraphModule>(copier.copy(root_, ""), graph_->clone());
  c10::IValue::HashAliasedIValueMap memo = copier.value_memo();
  for (const auto& [path, value] : attributes_) copy->attributes_.emplace(path, value.deepcopy(memo));
  for (const auto& [name, value] : preserved_) copy->preserved_.emplace(name, value.deepcopy(memo));
  copy->class_name_ = class_name_;
  return copy;
}

void GraphModule::set_graph(std::unique_ptr<Graph> graph) {
  TORCH_CHECK(graph != nullptr, "GraphModule::set_graph: null graph");
  graph_ = std::move(graph);
}

std::shared_ptr<torch::nn::Module> GraphModule::find_submodule(const std::string& path) const {
  if (!path.empty() && path.find('.') == std::string::npos) return child_of(*root_, path);  // most targets
  std::shared_ptr<torch::nn::Module> module = root_;
  size_t start = 0;
  while (module != nullptr && start < path.size()) {
    size_t dot = path.find('.', start);
    std::string name = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    module = child_of(*module, name);
    start = dot == std::string::npos ? path.size() : dot + 1;
  }
  return module;
}

std::shared_ptr<torch::nn::Module> GraphModule::get_submodule(const std::string& path) const {
  auto module = find_submodule(path);
  TORCH_CHECK(module != nullptr, "GraphModule has no submodule '", path, "'");
  return module;
}

void GraphModule::add_submodule(const std::string& path, std::shared_ptr<torch::nn::Module> module) {
  TORCH_CHECK(!path.empty(), "add_submodule: empty path");
  if (path.find('.') == std::string::npos) return set_child(*root_, path, std::move(module));
  auto [parent_path, name] = split_last(path);
  std::shared_ptr<torch::nn::Module> parent = find_submodule(parent_path);
  if (parent == nullptr) {
    add_submodule(parent_path, make_container_module());
    parent = find_submodule(parent_path);
  }
  set_child(*parent, name, std::move(module));
}

bool GraphModule::delete_submodule(const std::string& path) {
  auto [parent_path, name] = split_last(path);
  auto parent = find_submodule(parent_path);
  if (parent == nullptr || child_of(*parent, name) == nullptr) return false;
  if (auto* container = dynamic_cast<ContainerImpl*>(parent.get())) {
    container->remove_child(name);
  } else {
    parent->unregister_module(name);
  }
  return true;
}

bool GraphModule::has_attr(const std::string& path) const {
  if (attributes_.count(path) > 0) return true;
  auto [owner_path, name] = split_last(path);
  auto owner = find_submodule(owner_path);
  return owner != nullptr && tensor_of(*owner, name).has_value();
}

c10::IValue GraphModule::get_attr(const std::string& path) const {
  auto it = attributes_.find(path);
  if (it != attributes_.end()) return it->second;
  auto [owner_path, name] = split_last(path);
  auto owner = find_submodule(owner_path);
  TORCH_CHECK(owner != nullptr, "GraphModule has no attribute '", path, "': no submodule '", owner_path, "'");
  auto tensor = tensor_of(*owner, name);
  TORCH_CHECK(tensor.has_value(), "GraphModule has no attribute '", path, "'");
  return *tensor;
}

void GraphModule::set_attr(const std::string& path, c10::IValue value) {
  if (!value.isTensor()) {
    attributes_[path] = std::move(value);
    return;
  }
  attributes_.erase(path);
  auto [owner_path, name] = split_last(path);
  auto owner = owner_path.empty() ? root_ : find_submodule(owner_path);
  if (owner == nullptr) {
    add_submodule(owner_path, make_container_module());
    owner = find_submodule(owner_path);
  }
  if (auto* container = dynamic_cast<ContainerImpl*>(owner.get())) {
    container->set_tensor(name, value.toTensor());
    return;
  }
  if (auto existing = tensor_of(*owner, name)) {
    existing->set_data(value.toTensor());
    return;
  }
  owner->register_buffer(name, value.toTensor());
}

void GraphModule::rebuild_module_tree() {
  GraphModule old(root_, std::make_unique<Graph>());
  old.attributes_ = std::move(attributes_);
  root_ = make_container_module();
  root_->train(old.root_->is_training());
  attributes_.clear();
  for (Node* node : graph_->nodes()) {
    if (node->op() == Opcode::kCallModule && find_submodule(node->target()) == nullptr) {
      add_submodule(node->target(), old.get_submodule(node->target()));
    } else if (node->op() == Opcode::kGetAttr && !has_attr(node->target())) {
      set_attr(node->target(), old.get_attr(node->target()));
    }
  }
  retire(std::move(old.root_));
}

std::string GraphModule::to_string() const {
  std::string tree = module_repr(*root_);
  size_t paren = tree.find('(');
  return class_name_ + tree.substr(paren) + "\n" + code();
}

void GraphModule::lint() const {
  graph_->lint();
  for (Node* node : graph_->nodes()) {
    if (node->op() == Opcode::kCallModule) {
      TORCH_CHECK(find_submodule(node->target()) != nullptr, "lint: node %", node->name(), ": call_module target '",
                  node->target(), "' is not a submodule\n", graph_->to_string());
    } else if (node->op() == Opcode::kGetAttr) {
      TORCH_CHECK(has_attr(node->target()), "lint: node %", node->name(), ": get_attr target '", node->target(),
                  "' does not exist\n", graph_->to_string());
    }
  }
}

}  // namespace qfx::ir
