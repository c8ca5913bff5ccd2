// read_torch_save: LibTorch's unpickler over a torch.save archive in memory.
// It knows no nn.Parameter: `torch._utils._rebuild_parameter(tensor,
// requires_grad, hooks)` resolves here to a one-slot class whose object holds
// the tensor, and each such object is then replaced by its tensor.

#include "torch_save.h"

#include "pickle_rewrite.h"
#include "qfx/io/memory_bounds.h"
#include "zip_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace qfx::io::detail {
namespace {

/// The Python callables that rebuild an nn.Parameter; their first argument is its tensor.
bool is_parameter_rebuild(const c10::QualifiedName& name) {
  return name.prefix() == "torch._utils" &&
         (name.name() == "_rebuild_parameter" || name.name() == "_rebuild_parameter_with_state");
}

/// Parameters read as one-slot objects of one class.
class Parameters {
 public:
  Parameters() : unit_(std::make_shared<torch::jit::CompilationUnit>()) {
    type_ = c10::ClassType::create(c10::QualifiedName("qfx.Parameter"), unit_);
    type_->addAttribute("data", c10::TensorType::get());
  }

  c10::StrongTypePtr resolve(const c10::QualifiedName& name) const {
    TORCH_CHECK(is_parameter_rebuild(name), "Unpickler found unknown type ", name.qualifiedName());
    return c10::StrongTypePtr(unit_, type_);
  }

  c10::intrusive_ptr<c10::ivalue::Object> load(const c10::StrongTypePtr& type, const c10::IValue& args) const {
    TORCH_CHECK(args.isTuple() && !args.toTupleRef().elements().empty() && args.toTupleRef().elements()[0].isTensor(),
                "an nn.Parameter is pickled without its tensor");
    auto object = c10::ivalue::Object::create(type, 1);
    object->setSlot(0, args.toTupleRef().elements()[0]);
    return object;
  }

  /// `value` with each parameter object replaced by its tensor.
  c10::IValue unwrap(const c10::IValue& value) const {
    if (value.isObject() && value.toObjectRef().type() == type_) return value.toObjectRef().getSlot(0);
    if (value.isGenericDict()) {
      c10::impl::GenericDict out(value.toGenericDict().keyType(), c10::AnyType::get());
      for (const auto& item : value.toGenericDict()) out.insert(item.key(), unwrap(item.value()));
      return out;
    }
    if (value.isList()) {
      c10::impl::GenericList out(c10::AnyType::get());
      for (const c10::IValue& item : value.toListRef()) out.push_back(unwrap(item));
      return out;
    }
    if (value.isTuple()) {
      std::vector<c10::IValue> items;
      for (const c10::IValue& item : value.toTupleRef().elements()) items.push_back(unwrap(item));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    return value;
  }

 private:
  std::shared_ptr<torch::jit::CompilationUnit> unit_;
  c10::ClassTypePtr type_;
};

bool holds_parameters(std::string_view pickle) { return pickle.find("_rebuild_parameter") != std::string_view::npos; }

}  // namespace

c10::IValue read_torch_save(std::string_view bytes, const std::string& what) {
  caffe2::serialize::PyTorchStreamReader archive(std::make_shared<BoundedMemoryAdapter>(bytes));
  auto [data, size] = archive.getRecord("data.pkl");
  std::string pickle = ordered_dicts_as_dicts(
      expand_single_item_ops(std::string_view(static_cast<const char*>(data.get()), size), what + " (data.pkl)"));
  size_t position = 0;
  auto read = [&](char* buffer, size_t n) {
    n = std::min(n, pickle.size() - position);
    std::memcpy(buffer, pickle.data() + position, n);
    position += n;
    return n;
  };
  std::map<const void*, size_t> record_sizes;  // a storage's data -> the bytes its record holds
  auto read_record = [&](const std::string& name) {
    auto [record, record_size] = archive.getRecord("data/" + name);
    record_sizes[record.get()] = record_size;
    return std::move(record);
  };
  Parameters parameters;
  torch::jit::TypeResolver resolve;
  torch::jit::ObjLoader load;
  if (holds_parameters(pickle)) {
    resolve = [&](const c10::QualifiedName& name) { return parameters.resolve(name); };
    load = [&](const c10::StrongTypePtr& type, const c10::IValue& args) { return parameters.load(type, args); };
  }
  torch::jit::Unpickler unpickler(read, resolve, load, read_record, c10::nullopt);
  c10::IValue value = unpickler.parse_ivalue();
  if (holds_parameters(pickle)) value = parameters.unwrap(value);
  check_storages(value, what, [&](const c10::Storage& storage) -> std::optional<uint64_t> {
    auto it = record_sizes.find(storage.data());
    return it == record_sizes.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  });
  return value;
}

}  // namespace qfx::io::detail
