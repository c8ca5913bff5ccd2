// The process group: TCPStore rendezvous, ProcessGroupGloo collectives, every
// failure one c10::Error naming the address and the rank.

#include "qfx/dist/distributed.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <glog/logging.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace qfx::dist {
namespace {

// The first line of an exception's message, without LibTorch's backtrace.
std::string first_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string message = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  return message.substr(0, message.find('\n'));
}

int64_t env_number(const char* name, bool required, int64_t fallback) {
  const char* value = std::getenv(name);
  TORCH_CHECK(value != nullptr || !required, "environment variable ", name,
              " is not set (torchrun's variables: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)");
  if (value == nullptr) return fallback;
  char* end = nullptr;
  long long number = std::strtoll(value, &end, 10);
  TORCH_CHECK(*value != '\0' && *end == '\0', "environment variable ", name, "='", value, "' is not a number");
  return number;
}

void check_ranks(const DistOptions& o, const std::string& where) {
  TORCH_CHECK(o.world_size >= 1, where, ": world size ", o.world_size, " must be at least 1");
  TORCH_CHECK(o.rank >= 0 && o.rank < o.world_size, where, ": rank ", o.rank, " is not in [0, ", o.world_size, ")");
  TORCH_CHECK(o.port >= 0 && o.port <= 65535, where, ": port ", o.port, " is not in [0, 65535]");
}

/// This machine's IPv4 address on the route to `host` (what Gloo binds to).
std::string local_address_towards(const std::string& host, int port, const std::string& where) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int error = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  TORCH_CHECK(error == 0 && found != nullptr, "distributed rendezvous: ", where, ": cannot resolve '", host,
              "': ", gai_strerror(error));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owned(found, freeaddrinfo);
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  TORCH_CHECK(fd >= 0, "distributed rendezvous: ", where, ": cannot open a socket: ", std::strerror(errno));
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  const bool routed = connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int saved = errno;
  close(fd);
  TORCH_CHECK(routed, "distributed rendezvous: ", where, ": no route to ", host, ": ", std::strerror(saved));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return text;
}

/// Rank 0 publishes the world size; the others check theirs against it.
void check_world_size(c10d::Store& store, const DistOptions& o, const std::string& where) {
  const std::string key = "qfx/world_size";
  const std::string mine = std::to_string(o.world_size);
  if (o.rank == 0) {
    store.set(key, std::vector<uint8_t>(mine.begin(), mine.end()));
    return;
  }
  std::vector<uint8_t> value;
  try {
    value = store.get(key);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "distributed rendezvous: ", where, ": rank 0 did not answer within ", o.timeout.count() / 1000.0,
                " s: ", first_line(e));
  }
  const std::string theirs(value.begin(), value.end());
  TORCH_CHECK(theirs == mine, "distributed rendezvous: ", where, ": this rank was started with world size ", mine,
              ", rank 0 with ", theirs);
}

}  // namespace

DistOptions DistOptions::from_url(const std::string& url, int64_t world_size, int64_t rank) {
  const std::string scheme = "tcp://";
  const size_t colon = url.rfind(':');
  const bool shaped = url.rfind(scheme, 0) == 0 && colon > scheme.size() && colon + 1 < url.size() &&
                      url.size() - colon <= 6 && url.find_first_of("/ ", scheme.size()) == std::string::npos &&
                      url.find_first_not_of("0123456789", colon + 1) == std::string::npos;
  TORCH_CHECK(shaped, "--dist-url '", url.substr(0, 200), "': expected tcp://HOST:PORT");
  DistOptions o;
  o.host = url.substr(scheme.size(), colon - scheme.size());
  o.port = std::stoi(url.substr(colon + 1));
  o.world_size = world_size;
  o.rank = rank;
  check_ranks(o, "--dist-url " + url);
  return o;
}

std::optional<DistOptions> DistOptions::from_env() {
  if (std::getenv("WORLD_SIZE") == nullptr) return std::nullopt;
  DistOptions o;
  o.world_size = env_number("WORLD_SIZE", true, 1);
  o.rank = env_number("RANK", true, 0);
  const char* host = std::getenv("MASTER_ADDR");
  TORCH_CHECK(host != nullptr && *host != '\0', "environment variable MASTER_ADDR is not set (WORLD_SIZE is)");
  o.host = host;
  o.port = static_cast<int>(env_number("MASTER_PORT", true, 0));
  check_ranks(o, "WORLD_SIZE/RANK/MASTER_PORT");
  return o;
}

struct ProcessGroup::Impl {
  DistOptions options;
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;

  std::string where() const {
    return "rank " + std::to_string(options.rank) + " of " + std::to_string(options.world_size) + " (tcp://" +
           options.host + ":" + std::to_string(store ? store->getPort() : options.port) + ")";
  }
};

ProcessGroup::ProcessGroup(const DistOptions& options, const std::function<void(int)>& store_ready)
    : impl_(std::make_unique<Impl>()) {
  // c10d logs each retry and failure through glog on stderr; qfx reports
  // them as one error line instead.
  FLAGS_minloglevel = std::max(FLAGS_minloglevel, google::GLOG_FATAL);
  impl_->options = options;
  // Resolves rank 0's address first: an unknown host is an error now, not a timeout.
  const std::string local_address = local_address_towards(options.host, std::max(options.port, 1), impl_->where());
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(options.port);
  store_options.isServer = options.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(options.world_size);
  store_options.waitWorkers = false;
  store_options.timeout = options.timeout;
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(options.host, store_options);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "distributed rendezvous: ", impl_->where(), ": ",
                options.rank == 0 ? "cannot start the store: " : "cannot reach rank 0's store: ", first_line(e));
  }
  check_world_size(*impl_->store, options, impl_->where());
  if (options.rank == 0 && store_ready) store_ready(impl_->store->getPort());
  auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout);
  gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(local_address));
  try {
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, static_cast<int>(options.rank),
                                                               static_cast<int>(options.world_size), gloo);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "distributed rendezvous: ", impl_->where(), ": the ranks did not all join within ",
                options.timeout.count() / 1000.0, " s: ", first_line(e));
  }
}

ProcessGroup::~ProcessGroup() = default;

int64_t ProcessGroup::rank() const { return impl_->options.rank; }
int64_t ProcessGroup::world_size() const { return impl_->options.world_size; }
int ProcessGroup::port() const { return impl_->store->getPort(); }

void ProcessGroup::all_reduce(at::Tensor& tensor, Reduce op) {
  static const c10d::ReduceOp ops[] = {c10d::ReduceOp::SUM, c10d::ReduceOp::MIN, c10d::ReduceOp::MAX};
  TORCH_CHECK(tensor.is_contiguous() && tensor.device().is_cpu(), "all_reduce needs a contiguous CPU tensor");
  std::vector<at::Tensor> tensors = {tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = ops[static_cast<int>(op)];
  try {
    impl_->group->allreduce(tensors, options)->wait(impl_->options.timeout);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "distributed all-reduce: ", impl_->where(), ": another rank failed or did not answer within ",
                impl_->options.timeout.count() / 1000.0, " s: ", first_line(e));
  }
}

void ProcessGroup::barrier() {
  at::Tensor token = at::zeros({1});
  all_reduce(token, Reduce::kSum);
}

at::Tensor ProcessGroup::all_gather(const at::Tensor& mine) {
  // A sum in which every other rank adds zeros: exact, and one collective.
  std::vector<int64_t> shape = {world_size()};
  shape.insert(shape.end(), mine.sizes().begin(), mine.sizes().end());
  at::Tensor all = at::zeros(shape, mine.options());
  all[rank()].copy_(mine);
  all_reduce(all, Reduce::kSum);
  return all;
}

}  // namespace qfx::dist
