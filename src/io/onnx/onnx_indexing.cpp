// Basic indexing of a tensor (`x[i]`, `x[:, a:b]`, `x[..., ::2, None]`):
// each index item, left to right, becomes one ONNX op on the tensor so far.
// An integer is a Gather on its dim (which drops the dim), a slice a Slice,
// None an Unsqueeze; `...` stands for the dims no other item takes. Indexing
// moves elements without changing them, so a per-tensor quantized value is
// indexed as its integers and keeps its qparams.

#include "onnx_rules.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>

namespace qfx::io::onnx_export {
namespace {

using Kind = Value::Kind;

constexpr const char* kTensorIndex = "indexing a tensor with a tensor has no ONNX form here";

bool is_int(const Value& item) { return item.kind == Kind::kConstant && item.constant.isInt(); }
bool takes_a_dim(const Value& item) { return item.kind == Kind::kSlice || is_int(item); }

/// The ONNX tensor `x` is indexed as: its name, or an initializer for a constant.
std::string indexed_tensor(const Context& c, const Value& x) {
  bool quantized = x.kind == Kind::kQuantized || x.kind == Kind::kDequantized;
  if (quantized && (x.name.empty() || x.qparams.axis >= 0)) {
    c.fail("indexing a per-channel or constant quantized tensor has no ONNX form here");
  }
  return x.kind == Kind::kConstant ? c.tensor(x) : x.name;
}

int64_t rank_of(const Context& c, const Value& x) {
  if (x.kind == Kind::kConstant && x.constant.isTensor()) return x.constant.toTensor().dim();
  return c.rank_of_arg(0);
}

/// `x[start:stop:step]` along `axis`, or `x` itself for a slice that takes everything.
std::string slice(const Context& c, const std::string& x, const Value& s, int64_t axis) {
  auto bound = [&](const Value& v, int64_t absent) { return v.kind == Kind::kNone ? absent : c.int_of(v); };
  int64_t start = bound(s.items.at(0), 0);
  int64_t stop = bound(s.items.at(1), std::numeric_limits<int64_t>::max());
  int64_t step = bound(s.items.at(2), 1);
  if (step <= 0) c.fail("a slice step must be positive");
  if (start == 0 && stop == std::numeric_limits<int64_t>::max() && step == 1) return x;
  const std::string& h = c.hint();
  return c.g().op("Slice",
                  {x, c.g().ints(h + "_starts", {start}), c.g().ints(h + "_ends", {stop}),
                   c.g().ints(h + "_axes", {axis}), c.g().ints(h + "_steps", {step})},
                  h);
}

}  // namespace

Value index_tensor(const Context& c, const Value& x, const Value& index) {
  std::vector<Value> items = index.kind == Kind::kList ? index.items : std::vector<Value>{index};
  int64_t rank = rank_of(c, x);
  int64_t taken = std::count_if(items.begin(), items.end(), takes_a_dim);
  if (taken > rank) c.fail("too many indices for a tensor of rank " + std::to_string(rank));
  if (std::count_if(items.begin(), items.end(), [](const Value& v) { return v.kind == Kind::kEllipsis; }) > 1) {
    c.fail("an index can only have a single ellipsis");
  }
  std::string out = indexed_tensor(c, x);
  int64_t axis = 0;
  for (const Value& item : items) {
    switch (item.kind) {
      case Kind::kEllipsis: axis += rank - taken; break;
      case Kind::kNone: out = c.g().op("Unsqueeze", {out, c.g().ints(c.hint() + "_axes", {axis++})}, c.hint()); break;
      case Kind::kSlice: out = slice(c, out, item, axis++); break;
      case Kind::kConstant: {
        if (!is_int(item)) c.fail(kTensorIndex);
        std::string i = c.g().initializer(c.hint() + "_index", at::scalar_tensor(c.int_of(item), at::kLong));
        out = c.g().op("Gather", {out, i}, c.hint(), {{"axis", axis}});
        break;
      }
      default: c.fail(kTensorIndex);
    }
  }
  if (x.kind == Kind::kConstant) return Value::tensor(out);
  Value indexed = x;
  indexed.name = out;
  return indexed;
}

}  // namespace qfx::io::onnx_export
