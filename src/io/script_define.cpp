// define_method: TorchScript's compiler with a resolver for `torch` and
// `torch.ops`, which a C++ program has no Python module for.

#include "qfx/io/script_define.h"

#include <torch/csrc/jit/frontend/resolver.h>

namespace qfx::io {
namespace {

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
}  // namespace

void define_method(torch::jit::Module& module, const std::string& source) {
  module.define(source, std::make_shared<TorchResolver>());
}

}  // namespace qfx::io
