#pragma once
/// \file
/// The ATen -> FX op table: for each ATen op a TorchScript graph may hold, the
/// node FX's symbolic tracer would have recorded for the Python call that
/// produced it (`aten::add` -> `operator.add`, `aten::flatten` ->
/// `torch.flatten`, `aten::view` -> method `view`). Importers read it
/// forwards (find_op_mapping); writers ask for the inverse through
/// find_aten_spelling and never walk the rows themselves.

#include "qfx/ir/node.h"

#include <string>
#include <vector>

namespace qfx::ir {

/// How one ATen op becomes one FX node.
struct OpMapping {
  const char* aten;           ///< "aten::add" (all overloads)
  Opcode op;                  ///< kCallFunction or kCallMethod
  const char* target;         ///< "operator.add", "view", ...
  std::vector<int> order;     ///< ATen inputs that become FX args, in FX order; empty: all
  int max_positional = -1;    ///< FX args the target takes (-1: any)
  const char* fallback = "";  ///< target used when the args do not fit (e.g. alpha != 1)
  bool inplace = false;       ///< add `inplace=True`
};

/// Every mapping, in table order.
const std::vector<OpMapping>& op_mappings();

/// The mapping for an ATen op name, or nullptr.
const OpMapping* find_op_mapping(const std::string& aten_name);

/// How a writer spells an FX function call as the ATen op it traces to.
struct AtenSpelling {
  std::string aten;                   ///< "aten::hardtanh"
  std::vector<size_t> aten_position;  ///< ATen position of each FX arg; empty: the same positions
};

/// The ATen spelling of a `call_function` target (with `inplace=True` or
/// not): the first table row that maps to it, or nullptr.
const AtenSpelling* find_aten_spelling(const std::string& fx_target, bool inplace);

/// An ATen upsampling op and the F.interpolate mode it comes from.
struct UpsampleMapping {
  const char* aten;        ///< "aten::upsample_bilinear2d"
  const char* mode;        ///< "bilinear"
  bool has_align_corners;  ///< the op takes align_corners before scale_factors
};

/// Every upsampling op F.interpolate traces to.
const std::vector<UpsampleMapping>& upsample_mappings();

/// The upsampling row of an ATen op name, or nullptr.
const UpsampleMapping* find_upsample_mapping(const std::string& aten_name);

}  // namespace qfx::ir
