// open_data: the data source for a path, by its kind.

#include "data_sources.h"

#include "data_common.h"

#include <c10/util/Exception.h>

#include <filesystem>

namespace qfx::io {

std::unique_ptr<DataSource> open_data(const std::string& path, const DataOptions& options) {
  detail::check_options(options, path);
  TORCH_CHECK(std::filesystem::exists(path), "data '", path, "' does not exist");
  if (std::filesystem::is_directory(path)) return detail::open_image_folder(path, options);
  if (detail::is_idx_file(path)) return detail::open_idx(path, options);
  return detail::open_tensor_file(path, options);
}

}  // namespace qfx::io
