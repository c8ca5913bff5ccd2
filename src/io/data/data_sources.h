#pragma once
// The data source kinds behind open_data. Internal to src/data.

#include "qfx/io/data_source.h"

#include <memory>
#include <string>

namespace qfx::io::detail {

/// True for an IDX file name (`…-idx3-ubyte`, `…-idx1-ubyte.gz`).
bool is_idx_file(const std::string& path);
std::unique_ptr<DataSource> open_idx(const std::string& path, const DataOptions& options);
std::unique_ptr<DataSource> open_image_folder(const std::string& path, const DataOptions& options);
std::unique_ptr<DataSource> open_tensor_file(const std::string& path, const DataOptions& options);

}  // namespace qfx::io::detail
