// The process group: TCPStore rendezvous, ProcessGroupGloo collectives, every
// failure one c10::Error naming the address and the rank.

#include "qfx/distributed.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <regex>

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

bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0; }

}  // namespace

DistOptions DistOptions::from_url(const std::string& url, int64_t world_size, int64_t rank) {
  static const std::regex form(R"(tcp://([^:/\s]+):(\d{1,5}))");
  std::smatch m;
  TORCH_CHECK(std::regex_match(url, m, form), "--dist-url '", url, "': expected tcp://HOST:PORT");
  DistOptions o;
  o.host = m[1];
  o.port = std::stoi(m[2]);
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
  impl_->options = options;
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
  if (options.rank == 0 && store_ready) store_ready(impl_->store->getPort());
  auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout);
  gloo->devices.push_back(is_loopback(options.host) ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                                    : c10d::ProcessGroupGloo::createDefaultDevice());
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

}  // namespace qfx::dist
