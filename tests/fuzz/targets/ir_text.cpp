// The IR text parser. A graph it accepts passes lint, and its printed form
// is a fixed point: parsing and printing it again gives the same text.
#include "fuzz/fuzz_target.h"

#include "qfx/ir/graph.h"
#include "qfx/ir/parser.h"
#include "qfx/ir/printer.h"

#include <c10/util/Exception.h>

QFX_FUZZ_TARGET(ir_text) {
  std::unique_ptr<qfx::ir::Graph> graph;
  try {
    graph = qfx::ir::parse_graph(qfx::fuzz::as_text(data, size));
  } catch (const c10::Error&) {
    return false;
  }
  graph->lint();  // a c10::Error here is a finding: the parser built a graph lint refuses
  std::string printed = graph->to_string();
  std::string again = qfx::ir::parse_graph(printed)->to_string();
  qfx::fuzz::require(again == printed,
                     "the printed graph does not parse back to itself:\n" + printed + "\n--\n" + again);
  try {
    qfx::ir::python_code(*graph);
  } catch (const c10::Error&) {  // code for what FX cannot print (e.g. a target that is no name)
  }
  return true;
}
