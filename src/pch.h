// Precompiled header shared by the library, the CLI and the tests: the LibTorch
// front end is by far the largest part of every translation unit's compile time.
#pragma once
#include <torch/nn.h>
#include <torch/script.h>
