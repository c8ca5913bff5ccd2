// export_torchscript: the graph rewritten into TorchScript's vocabulary
// (functional calls as ATen ops, dtypes as their codes, attributes flattened
// onto one root), printed by the FX code writer, compiled with
// torch::jit::Module::define and saved.

#include "qfx/io/torchscript_export.h"
#include "qfx/ir/op_names.h"

#include "../import/op_table.h"
#include "module_script.h"

#include "qfx/ir/printer.h"

#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/script.h>

#include <iterator>
#include <sstream>

namespace qfx::io {
namespace {

using detail::ScriptAttrs;

/// `torch` is ATen's ops plus `torch.ops.NS.op`, as Python's torch.
struct TorchValue : torch::jit::SugaredValue {
  std::string kind() const override { return "torch"; }
  std::shared_ptr<torch::jit::SugaredValue> attr(const torch::jit::SourceRange& loc, torch::jit::GraphFunction& m,
                                                 const std::string& field) override {
    if (field == "ops") return std::make_shared<OpsValue>();
    return std::make_shared<torch::jit::BuiltinModule>("aten")->attr(loc, m, field);
  }
  struct OpsValue : torch::jit::SugaredValue {
    std::string kind() const override { return "torch.ops"; }
    std::shared_ptr<torch::jit::SugaredValue> attr(const torch::jit::SourceRange&, torch::jit::GraphFunction&,
                                                   const std::string& ns) override {
      return std::make_shared<torch::jit::BuiltinModule>(ns);
    }
  };
};

struct TorchResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction&,
                                                         const torch::jit::SourceRange&) override {
    return name == "torch" ? std::make_shared<TorchValue>() : nullptr;
  }
};

/// Dtypes, layouts and memory formats as the integer codes TorchScript reads.
ir::Argument as_codes(const ir::Argument& arg) {
  switch (arg.kind()) {
    case ir::Argument::Kind::kDtype: return static_cast<int64_t>(arg.to_dtype());
    case ir::Argument::Kind::kLayout: return static_cast<int64_t>(arg.to_layout());
    case ir::Argument::Kind::kMemoryFormat: return static_cast<int64_t>(arg.to_memory_format());
    case ir::Argument::Kind::kList:
    case ir::Argument::Kind::kTuple: {
      ir::Argument::Items items;
      for (const ir::Argument& item : arg.items()) items.push_back(as_codes(item));
      return arg.kind() == ir::Argument::Kind::kList ? ir::Argument::list(items) : ir::Argument::tuple(items);
    }
    default: return arg;
  }
}

/// A `torch.nn.functional.X` call as the ATen op the importer read it from.
void to_aten(ir::Node& node) {
  const ir::Argument* inplace = node.kwarg("inplace");
  bool want_inplace = inplace != nullptr && inplace->kind() == ir::Argument::Kind::kBool && inplace->to_bool();
  for (const detail::OpMapping& row : detail::op_mappings()) {
    if (row.op != ir::Opcode::kCallFunction || node.target() != row.target || row.inplace != want_inplace) continue;
    std::vector<ir::Argument> args(row.order.empty() ? node.args().size() : 0);
    if (row.order.empty()) {
      args = node.args();
    } else {
      for (size_t i = 0; i < row.order.size() && i < node.args().size(); ++i) {
        size_t at = static_cast<size_t>(row.order[i]);
        if (args.size() <= at) args.resize(at + 1);
        args[at] = node.args()[i];
      }
    }
    ir::Kwargs kwargs;
    for (const auto& kv : node.kwargs()) {
      if (kv.first != "inplace") kwargs.push_back(kv);
    }
    node.set_target("torch." + std::string(row.aten).substr(6));
    node.set_args(args);
    node.set_kwargs(kwargs);
    return;
  }
  TORCH_CHECK(false, "export: no TorchScript form for %", node.name(), " (", node.target(), ")");
}

/// `torch._assert(condition, message)`: TorchScript has no operator for it
/// (Python compiles it to an `if` that raises), so the check is kept as
/// `torch._assert_async(torch.tensor(condition))`, without the message.
void lower_assert(ir::Graph& graph, ir::Node& node) {
  auto guard = graph.inserting_before(&node);
  ir::Node* condition = graph.call_function("torch.tensor", {node.args().at(0)});
  node.set_target("torch._assert_async");
  node.set_args({condition});
}

/// `F.interpolate(x, size=..., scale_factor=..., mode=..., align_corners=...)`
/// as TorchScript's own `aten::__interpolate`, which computes as Python's.
void interpolate_to_aten(ir::Node& node) {
  std::vector<ir::Argument> args = node.args();
  const char* names[] = {"input", "size", "scale_factor", "mode", "align_corners"};
  args.resize(std::size(names));
  for (size_t i = 1; i < std::size(names); ++i) {
    if (const ir::Argument* kw = node.kwarg(names[i])) args[i] = *kw;
  }
  if (args[3].is_none()) args[3] = std::string("nearest");
  node.set_target("torch.__interpolate");
  node.set_args(args);
  node.set_kwargs({});
}

/// The graph in TorchScript's vocabulary, with attributes registered in `attrs`.
std::unique_ptr<ir::Graph> script_graph(const ir::GraphModule& gm, ScriptAttrs& attrs) {
  std::unique_ptr<ir::Graph> graph = gm.graph().clone();
  for (ir::Node* node : graph->node_list()) {
    if (node->op() == ir::Opcode::kCallFunction && node->target() == "torch._assert") lower_assert(*graph, *node);
  }
  for (ir::Node* node : graph->nodes()) {
    std::vector<ir::Argument> args;
    for (const ir::Argument& a : node->args()) args.push_back(as_codes(a));
    node->set_args(args);
    ir::Kwargs kwargs;
    for (const auto& [k, v] : node->kwargs()) kwargs.emplace_back(k, as_codes(v));
    node->set_kwargs(kwargs);
    if (node->op() == ir::Opcode::kGetAttr) {
      node->set_target(attrs.add(node->target(), gm.get_attr(node->target())).substr(5));
    } else if (node->op() == ir::Opcode::kCallFunction) {
      const std::string& t = node->target();
      if (t == "torch.nn.functional.interpolate") {
        interpolate_to_aten(*node);
      } else if (t.rfind("torch.nn.functional.", 0) == 0) {
        to_aten(*node);
      }
      bool known = t.rfind("torch.", 0) == 0 || t.rfind("operator.", 0) == 0 || t == ir::op::kGetattr;
      TORCH_CHECK(known, "export: no TorchScript form for %", node->name(), " (", t, ")");
    }
  }
  return graph;
}

std::string source_of(const ir::GraphModule& gm, ScriptAttrs& attrs) {
  std::unique_ptr<ir::Graph> graph = script_graph(gm, attrs);
  ir::CodegenHooks hooks;
  hooks.release_values = false;
  hooks.subscript_syntax = true;
  hooks.one_statement_per_line = true;
  hooks.placeholder_type = [](const ir::Node& node) {
    auto it = node.meta().find(ir::kInputTypeMeta);
    return it == node.meta().end() ? std::string() : std::any_cast<std::string>(it->second);
  };
  hooks.call_module = [&](const ir::Node& node, const std::vector<std::string>& args) {
    return detail::module_expression(*gm.get_submodule(node.target()), node.target(), args, attrs);
  };
  return ir::python_code(*graph, "self", hooks).substr(3);  // drop FX's leading blank lines
}

}  // namespace

std::string torchscript_source(const ir::GraphModule& gm) {
  ScriptAttrs attrs(std::make_shared<torch::jit::CompilationUnit>());
  return source_of(gm, attrs);
}

namespace {

/// The exported module of `gm`: its forward and attributes (preserved ones
/// under their own names), its TorchScript and nested modules as submodules.
torch::jit::Module script_module(const ir::GraphModule& gm, const std::string& class_name) {
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  ScriptAttrs attrs(unit);
  for (const auto& [name, value] : gm.preserved_attributes()) {
    // `training` is every module's flag: the exported module's own (False,
    // mark_eval) stands for it, as a preserved `training` does in PyTorch
    if (name != "training") attrs.add_exact(name, value);
  }
  std::string source = source_of(gm, attrs);
  torch::jit::Module module(class_name, unit, /*shouldMangle=*/true);
  detail::mark_eval(module);
  for (const auto& [name, value] : attrs.values()) {
    if (value.isObject() && value.toObjectRef().type()->is_module()) {
      module.register_module(name, torch::jit::Module(value.toObject()));
    } else {
      module.register_attribute(name, value.type(), value, /*is_param=*/false, /*is_buffer=*/value.isTensor());
    }
  }
  detail::define_forward(module, source);
  return module;
}

}  // namespace

namespace detail {

void mark_eval(torch::jit::Module& module) { module.register_attribute("training", c10::BoolType::get(), false); }

void define_forward(torch::jit::Module& module, const std::string& source) {
  try {
    module.define(source, std::make_shared<TorchResolver>());
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "export: TorchScript rejected the generated forward: ", e.what());
  }
}

c10::IValue nested_script_module(const ir::GraphModule& gm, const std::string& path) {
  std::string suffix;
  for (char c : path) suffix += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return script_module(gm, "__torch__.qfx.ExportedModule_" + suffix)._ivalue();
}

}  // namespace detail

void export_torchscript(const ir::GraphModule& gm, const std::string& path, const OutputOptions& options) {
  check_output(path, options);  // before the work of scripting the module
  torch::jit::Module module = script_module(gm, "__torch__.qfx.ExportedModule");
  std::ostringstream archive;
  try {
    module.save(archive);
  } catch (const c10::Error& e) {  // qnnpack cannot unpack the Conv1d/Conv3d weights it packed
    TORCH_CHECK(false, "export: LibTorch cannot save the packed weights of this engine: ", e.what_without_backtrace(),
                " (export with --engine onednn)");
  }
  write_output(path, archive.str(), options);
}

}  // namespace qfx::io
