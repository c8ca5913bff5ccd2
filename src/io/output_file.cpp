// The output writer: every file qfx writes goes through write_output, which
// follows symlinks to their target, refuses anything that is not a regular
// file (a device such as /dev/full, a fifo, a directory) and the command's own
// inputs, and replaces the target by renaming a complete, fsync'ed temporary
// file from the same directory over it, so a reader or a second writer only
// ever sees a whole file.

#include "qfx/io/output_file.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace qfx::io {

namespace {

constexpr int kMaxSymlinkHops = 40;

std::string error_text(int error) { return std::strerror(error); }

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// The target's mode when it exists (a regular file), nullopt when it does not.
std::optional<mode_t> existing_mode(const std::string& path, const std::string& target) {
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0) {
    TORCH_CHECK(errno == ENOENT, "cannot write '", path, "': ", error_text(errno));
    return std::nullopt;
  }
  TORCH_CHECK(S_ISREG(info.st_mode), "cannot write '", path, "': it is ", kind_of(info.st_mode),
              ", not a regular file (qfx replaces only regular files; -o - writes to standard output)");
  return info.st_mode & 07777;
}

void check_directory(const std::string& path, const std::string& target) {
  std::string dir = directory_of(target);
  struct stat info {};
  TORCH_CHECK(::stat(dir.c_str(), &info) == 0, "cannot write '", path, "': directory '", dir, "': ", error_text(errno));
  TORCH_CHECK(S_ISDIR(info.st_mode), "cannot write '", path, "': '", dir, "' is not a directory");
}

void check_not_input(const std::string& path, const std::string& target, const OutputOptions& options) {
  struct stat out {};
  if (options.force || ::stat(target.c_str(), &out) != 0) return;  // forced, or nothing to overwrite
  for (const std::string& input : options.inputs) {
    struct stat in {};
    if (input.empty() || input == "-" || ::stat(input.c_str(), &in) != 0) continue;
    TORCH_CHECK(in.st_dev != out.st_dev || in.st_ino != out.st_ino, "cannot write '", path, "': it is the input file '",
                input, "' of this command (pass --force to overwrite it)");
  }
}

/// A temporary file beside the target, removed on destruction unless renamed.
class TemporaryFile {
 public:
  TemporaryFile(const std::string& path, const std::string& target) : path_(path) {
    static std::atomic<uint64_t> counter{0};
    std::string base = target.substr(target.rfind('/') + 1);
    std::string prefix = directory_of(target) + "/." + base + ".qfx-" + std::to_string(::getpid()) + "-";
    for (int attempt = 0; fd_ < 0 && attempt < 100; ++attempt) {
      auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
      name_ = prefix + std::to_string(counter++) + "-" + std::to_string(stamp % 1000000007);
      fd_ = ::open(name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) fail("cannot create a temporary file in '" + directory_of(target) + "'");
    }
    if (fd_ < 0) fail("cannot create a temporary file in '" + directory_of(target) + "'");
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!name_.empty()) ::unlink(name_.c_str());
  }

  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("");
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  /// Gives the file the target's permissions, syncs, closes and renames it.
  void commit(const std::string& target, std::optional<mode_t> mode) {
    if (mode && ::fchmod(fd_, *mode) != 0) fail("");
    if (::fsync(fd_) != 0) fail("");
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("");
    if (::rename(name_.c_str(), target.c_str()) != 0) fail("");
    name_.clear();
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    int error = errno;
    TORCH_CHECK(false, "cannot write '", path_, "': ", what.empty() ? std::string() : what + ": ", error_text(error));
  }

  std::string path_;
  std::string name_;
  int fd_ = -1;
};

void write_stdout(std::string_view bytes) {
  std::cout.flush();
  while (!bytes.empty()) {
    ssize_t n = ::write(STDOUT_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    TORCH_CHECK(n > 0, "cannot write to standard output: ", error_text(errno));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

/// Makes a file's directory entry durable; a failure here loses nothing the
/// rename has not already made visible, so it is not an error.
void sync_directory(const std::string& target) {
  int fd = ::open(directory_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string output_target(const std::string& path) {
  std::string target = path;
  for (int hop = 0; hop < kMaxSymlinkHops; ++hop) {
    struct stat info {};
    if (target == "-" || ::lstat(target.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return target;
    std::vector<char> link(static_cast<size_t>(info.st_size > 0 ? info.st_size : 4096) + 1);
    ssize_t n = ::readlink(target.c_str(), link.data(), link.size());
    TORCH_CHECK(n >= 0, "cannot write '", path, "': ", error_text(errno));
    std::string next(link.data(), static_cast<size_t>(n));
    target = next.front() == '/' ? next : directory_of(target) + "/" + next;
  }
  TORCH_CHECK(false, "cannot write '", path, "': too many levels of symbolic links");
}

void check_output(const std::string& path, const OutputOptions& options) {
  TORCH_CHECK(!path.empty(), "cannot write an output file with an empty name");
  if (path == "-") return;
  std::string target = output_target(path);
  existing_mode(path, target);
  check_directory(path, target);
  check_not_input(path, target, options);
}

void write_output(const std::string& path, std::string_view bytes, const OutputOptions& options) {
  check_output(path, options);
  if (path == "-") return write_stdout(bytes);
  std::string target = output_target(path);
  std::optional<mode_t> mode = existing_mode(path, target);
  TemporaryFile file(path, target);
  file.write(bytes);
  file.commit(target, mode);
  sync_directory(target);
}

}  // namespace qfx::io
