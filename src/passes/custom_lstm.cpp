// The custom module LSTM's DeQuantStubs: placed by prepare after each
// output, turned into dequantize nodes by convert.

#include "custom_lstm.h"
#include "qfx/ir/op_names.h"

#include "qfx/ir/module_registry.h"
#include "qfx/nn/quantizable_lstm.h"

#include <c10/util/Exception.h>

namespace qfx::passes::detail {
namespace {

bool is_getitem_of(const ir::Node& user, const ir::Node& value) {
  return user.op() == ir::Opcode::kCallFunction && user.target() == ir::op::kGetitem && user.args().size() == 2 &&
         user.args()[0].is_node() && user.args()[0].to_node() == &value &&
         user.args()[1].kind() == ir::Argument::Kind::kInt;
}

/// The getitem users of `value` taking item `index`; c10::Error for any other use.
std::vector<ir::Node*> items_of(const ir::Node& lstm, const ir::Node& value, int64_t index, const char* what) {
  std::vector<ir::Node*> found;
  for (ir::Node* user : value.users()) {
    TORCH_CHECK(is_getitem_of(*user, value) && (user->args()[1].to_int() == 0 || user->args()[1].to_int() == 1), "%",
                lstm.name(), ": a statically quantized custom module LSTM returns quantized tensors, so its ", what,
                " can only be indexed; %", user->name(), " uses it otherwise (write out, (h, c) = lstm(...))");
    if (user->args()[1].to_int() == index) found.push_back(user);
  }
  return found;
}

std::string next_stub_name(const ir::GraphModule& gm) {
  for (int64_t i = 0;; ++i) {
    std::string name = "dequant_stub_" + std::to_string(i);
    if (gm.find_submodule(name) == nullptr && !gm.has_attr(name)) return name;
  }
}

void insert_stub(ir::GraphModule& gm, ir::Node& value, std::unordered_map<const ir::Node*, DtypeInfo>& dtypes) {
  std::string name = next_stub_name(gm);
  gm.add_submodule(name, std::make_shared<nn::DeQuantStubImpl>());
  ir::Node* stub = nullptr;
  {
    auto guard = gm.graph().inserting_after(&value);
    stub = gm.graph().call_module(name, {ir::Argument(&value)});
  }
  value.replace_all_uses_with(stub, [stub](ir::Node* user) { return user != stub; });
  DtypeInfo info;
  info.input = info.output = c10::kQUInt8;
  dtypes[stub] = info;
}

}  // namespace

bool is_custom_module_lstm(const torch::nn::Module& module, const quant::QConfig& qconfig) {
  return ir::module_type_name(module) == "torch.nn.LSTM" && quant::activation_is_statically_quantized(qconfig);
}

void insert_lstm_dequant_stubs(ir::GraphModule& gm, ir::Node& lstm,
                               std::unordered_map<const ir::Node*, DtypeInfo>& dtypes) {
  for (ir::Node* out : items_of(lstm, lstm, 0, "result")) insert_stub(gm, *out, dtypes);
  for (ir::Node* hidden : items_of(lstm, lstm, 1, "result")) {
    for (int64_t i = 0; i < 2; ++i) {
      for (ir::Node* state : items_of(lstm, *hidden, i, "state (h_n, c_n)")) insert_stub(gm, *state, dtypes);
    }
  }
}

bool is_dequant_stub(const ir::Node& node, const ir::GraphModule& gm) {
  if (node.op() != ir::Opcode::kCallModule) return false;
  auto module = gm.find_submodule(node.target());
  return module != nullptr && dynamic_cast<const nn::DeQuantStubImpl*>(module.get()) != nullptr;
}

}  // namespace qfx::passes::detail
