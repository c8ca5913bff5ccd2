// Precompiled header shared by the library, the CLI and the tests: LibTorch's
// tensor and TorchScript headers, which nearly every translation unit reads.
// Not <torch/nn.h>: gcc instantiates the templates a precompiled header
// leaves pending in every translation unit that uses it, and the module
// library's cost 4-6 s per file, more than parsing it where it is included.
#pragma once
#include <torch/script.h>
