// The output writer: every file qfx writes goes through write_output, which
// follows symlinks to their target, writes a stream (a pipe, terminal or
// character device) in place, refuses anything else that is not a regular
// file (a directory, a block device) and the command's own inputs, and
// replaces the target by renaming a complete, fsync'ed temporary file from
// the same directory over it, so a reader or a second writer only ever sees
// a whole file. OutputBatch stages a command's outputs and commits them
// together.

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

/// True when `path` (symlinks followed) is a pipe, terminal or character
/// device: written in place, as standard output is.
bool is_stream(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return false;
  return S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode);
}

/// The target's mode when it exists (a regular file), nullopt when it does not.
std::optional<mode_t> existing_mode(const std::string& path, const std::string& target) {
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0) {
    TORCH_CHECK(errno == ENOENT, "cannot write '", path, "': ", error_text(errno));
    return std::nullopt;
  }
  TORCH_CHECK(S_ISREG(info.st_mode), "cannot write '", path, "': it is ", kind_of(info.st_mode),
              ", not a regular file, a pipe or a terminal");
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

  /// Gives the file the target's permissions, syncs and closes it.
  void finish(std::optional<mode_t> mode) {
    if (mode && ::fchmod(fd_, *mode) != 0) fail("");
    if (::fsync(fd_) != 0) fail("");
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("");
  }

  /// Renames the finished file over `target`.
  void rename_over(const std::string& target) {
    if (::rename(name_.c_str(), target.c_str()) != 0) fail("");
    name_.clear();
  }

  const std::string& name() const { return name_; }

 private:
  [[noreturn]] void fail(const std::string& what) {
    int error = errno;
    TORCH_CHECK(false, "cannot write '", path_, "': ", what.empty() ? std::string() : what + ": ", error_text(error));
  }

  std::string path_;
  std::string name_;
  int fd_ = -1;
};

void write_all(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    TORCH_CHECK(n > 0, "cannot write ", what, ": ", error_text(errno));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

/// Standard output for `-`, else the stream `path` opened in place. A fifo
/// no process reads is an error, not a wait.
void write_stream(const std::string& path, std::string_view bytes) {
  std::cout.flush();
  if (path == "-") return write_all(STDOUT_FILENO, bytes, "to standard output");
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  TORCH_CHECK(fd >= 0, "cannot write '", path,
              "': ", errno == ENXIO ? std::string("no process reads the fifo") : error_text(errno));
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  try {
    write_all(fd, bytes, "'" + path + "'");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
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
  if (path == "-" || is_stream(path)) return;
  std::string target = output_target(path);
  existing_mode(path, target);
  check_directory(path, target);
  check_not_input(path, target, options);
}

void write_output(const std::string& path, std::string_view bytes, const OutputOptions& options) {
  if (options.batch != nullptr) return options.batch->stage(path, bytes, options);
  OutputBatch batch;
  batch.stage(path, bytes, options);
  batch.commit();
}

/// One staged output: a finished temporary file and its target, or a
/// stream's bytes (`target` empty).
struct OutputBatch::Staged {
  std::string path, target, bytes;
  std::unique_ptr<TemporaryFile> file;
  std::string backup;    ///< a hard link of the target this replaces, while committing
  bool existed = false;  ///< the target was there before the commit
  bool committed = false;
};

OutputBatch::OutputBatch() = default;

OutputBatch::~OutputBatch() {
  for (const auto& s : staged_) {
    if (!s->backup.empty()) ::unlink(s->backup.c_str());
  }
}

void OutputBatch::stage(const std::string& path, std::string_view bytes, const OutputOptions& options) {
  check_output(path, options);
  auto staged = std::make_unique<Staged>();
  staged->path = path;
  if (path == "-" || is_stream(path)) {
    staged->bytes = std::string(bytes);
  } else {
    staged->target = output_target(path);
    std::optional<mode_t> mode = existing_mode(path, staged->target);
    staged->file = std::make_unique<TemporaryFile>(path, staged->target);
    staged->file->write(bytes);
    staged->file->finish(mode);
  }
  staged_.push_back(std::move(staged));
}

int64_t OutputBatch::staged_size(const std::string& path) const {
  for (const auto& s : staged_) {
    if (s->path != path) continue;
    if (s->target.empty()) return static_cast<int64_t>(s->bytes.size());
    struct stat info {};
    return ::stat(s->file->name().c_str(), &info) == 0 ? static_cast<int64_t>(info.st_size) : -1;
  }
  return -1;
}

namespace {

/// A hard link to an existing `target` beside it (empty when there is no
/// target, or the file system makes no links): what a failed commit puts back.
std::string backup_of(const std::string& target) {
  static std::atomic<uint64_t> counter{0};
  std::string base = target.substr(target.rfind('/') + 1);
  std::string name = directory_of(target) + "/." + base + ".qfx-backup-" + std::to_string(::getpid()) + "-" +
                     std::to_string(counter++);
  return ::link(target.c_str(), name.c_str()) == 0 ? name : "";
}

}  // namespace

void OutputBatch::commit() {
  for (const auto& s : staged_) {
    if (s->target.empty()) write_stream(s->path, s->bytes);
  }
  for (size_t i = 0; i < staged_.size(); ++i) {
    Staged& s = *staged_[i];
    if (s.target.empty()) continue;
    struct stat info {};
    s.existed = ::lstat(s.target.c_str(), &info) == 0;
    s.backup = backup_of(s.target);
    try {
      s.file->rename_over(s.target);
      s.committed = true;
    } catch (const c10::Error&) {
      for (size_t j = 0; j < i; ++j) {  // the targets renamed over, as they were
        Staged& done = *staged_[j];
        if (!done.committed) continue;
        if (!done.existed) {
          ::unlink(done.target.c_str());
        } else if (!done.backup.empty() && ::rename(done.backup.c_str(), done.target.c_str()) == 0) {
          done.backup.clear();
        }
      }
      throw;
    }
  }
  for (const auto& s : staged_) {
    if (s->target.empty()) continue;
    if (!s->backup.empty() && ::unlink(s->backup.c_str()) == 0) s->backup.clear();
    sync_directory(s->target);
  }
  staged_.clear();
}

}  // namespace qfx::io
