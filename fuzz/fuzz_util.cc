#include "fuzz_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "radix/io/weight_store.h"
#include "radix/tokenizer/tokenizer.h"
#include "radix/tokenizer/utf8_stream.h"

// ---- mmap -> heap copy (linked with -Wl,--wrap=mmap,--wrap=munmap) ---------

extern "C" void* __real_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off);
extern "C" int __real_munmap(void* addr, size_t len);

namespace {

std::atomic<int> g_map_guards{0};
std::mutex g_copies_mu;
std::unordered_map<void*, size_t>& copies() {
  static auto* m = new std::unordered_map<void*, size_t>();  // never destroyed: used until exit
  return *m;
}

void* heap_copy_of(int fd, size_t len, off_t off) {
  void* p = std::malloc(len);  // exactly `len` bytes: ASan flags the first byte past them
  if (p == nullptr) return nullptr;
  size_t got = 0;
  while (got < len) {
    const ssize_t n = ::pread(fd, static_cast<char*>(p) + got, len - got, off + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  // A real mapping past the end of the file reads zeros within the last page.
  if (got < len) std::memset(static_cast<char*>(p) + got, 0, len - got);
  return p;
}

}  // namespace

extern "C" void* __wrap_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (g_map_guards.load() > 0 && addr == nullptr && len > 0 && prot == PROT_READ && flags == MAP_PRIVATE &&
      fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      void* p = heap_copy_of(fd, len, off);
      if (p == nullptr) {
        errno = ENOMEM;
        return MAP_FAILED;
      }
      std::lock_guard<std::mutex> lock(g_copies_mu);
      copies().emplace(p, len);
      return p;
    }
  }
  return __real_mmap(addr, len, prot, flags, fd, off);
}

extern "C" int __wrap_munmap(void* addr, size_t len) {
  {
    std::lock_guard<std::mutex> lock(g_copies_mu);
    auto it = copies().find(addr);
    if (it != copies().end()) {
      if (it->second != len) {
        std::fprintf(stderr, "fuzz: munmap(%p, %zu) of a mapping of %zu bytes\n", addr, len, it->second);
        std::abort();
      }
      copies().erase(it);
      std::free(addr);
      return 0;
    }
  }
  return __real_munmap(addr, len);
}

namespace radix::fuzz {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n  %s\n", file, line, cond, msg.c_str());
  std::abort();
}

FuzzMapGuard::FuzzMapGuard() { g_map_guards.fetch_add(1); }
FuzzMapGuard::~FuzzMapGuard() { g_map_guards.fetch_sub(1); }

namespace {
std::string* g_dir = nullptr;
void remove_work_dir() {
  if (g_dir == nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(*g_dir, ec);
}
}  // namespace

const std::string& work_dir() {
  if (g_dir == nullptr) {
    // RADIX_FUZZ_TMPDIR (scripts/fuzz.sh sets it, and removes it even after a
    // crash, which skips atexit), else /dev/shm, else $TMPDIR, else /tmp.
    std::string base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') base = t;
    struct stat st {};
    if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    if (const char* t = std::getenv("RADIX_FUZZ_TMPDIR"); t != nullptr && *t != '\0') base = t;
    std::string tmpl = base + "/radix-fuzz-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      std::perror("fuzz: mkdtemp");
      std::abort();
    }
    g_dir = new std::string(buf.data());
    std::atexit(remove_work_dir);
  }
  return *g_dir;
}

std::string write_file(std::string_view name, const uint8_t* data, size_t size) {
  std::string path = work_dir() + "/" + std::string(name);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(("fuzz: open " + path).c_str());
    std::abort();
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::perror(("fuzz: write " + path).c_str());
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

volatile uint8_t g_sink;

void exercise_store(const radix::io::WeightStore& store) {
  uint64_t total = 0;
  for (const radix::io::TensorInfo& t : store.tensors()) {
    FUZZ_CHECK(radix::io::is_valid_utf8(t.name), "tensor name is not valid UTF-8");
    const radix::io::TensorInfo* found = store.find(t.name);
    FUZZ_CHECK(found != nullptr, "find('" + t.name + "') is null for a listed tensor");
    FUZZ_CHECK(found->shape == t.shape, "find('" + t.name + "') disagrees with tensors()");
    auto bytes = store.bytes(t.name);
    FUZZ_CHECK(bytes.ok(), "bytes('" + t.name + "'): " + bytes.status().to_string());
    FUZZ_CHECK(bytes->size() == t.shape.byte_size(),
               "bytes('" + t.name + "') is " + std::to_string(bytes->size()) + " bytes, shape " +
                   t.shape.to_string() + " needs " + std::to_string(t.shape.byte_size()));
    uint8_t acc = 0;
    for (std::byte b : *bytes) acc = static_cast<uint8_t>(acc * 31 + static_cast<uint8_t>(b));
    g_sink = acc;
    total += t.shape.byte_size();
  }
  FUZZ_CHECK(store.total_bytes() == total, "total_bytes() is not the sum of the tensors' sizes");
  const char* kMissing = "\x01no such tensor\x02";
  if (store.find(kMissing) == nullptr) {
    auto missing = store.bytes(kMissing);
    FUZZ_CHECK(!missing.ok() && missing.status().code() == radix::ErrorCode::kNotFound,
               "bytes() of an unknown name is not kNotFound");
  }
  size_t chars = 0;
  for (const auto& [k, v] : store.metadata()) chars += k.size() + v.size();
  g_sink = static_cast<uint8_t>(chars + store.path().size() + store.format().size());
}

void exercise_tokenizer(const radix::tok::Tokenizer& tok, std::string_view extra_text) {
  const int32_t n = tok.vocab_size();
  FUZZ_CHECK(n >= 0, "negative vocab_size");
  FUZZ_CHECK(tok.bos() >= -1 && tok.bos() < std::max(n, 1), "bos out of range");
  FUZZ_CHECK(tok.eos() >= -1 && tok.eos() < std::max(n, 1), "eos out of range");

  // Some text made of the vocabulary itself: merges get exercised.
  std::string vocab_text;
  for (int32_t id = 0; id < n && id < 24; ++id) vocab_text += tok.piece(-2, id);
  if (vocab_text.size() > 128) vocab_text.resize(128);

  const std::string_view texts[] = {
      "",
      "a",
      "Hello world",
      " once upon a time,  there was\ta cat.\n",
      "h\xC3\xA9llo \xE2\x96\x81 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80",  // é ▁ 日本 😀
      std::string_view("\xFF\xFE\x00\x80 \xC3", 6),                            // invalid UTF-8, a NUL
      vocab_text,
      extra_text.substr(0, 128),
  };
  for (std::string_view text : texts) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool bos = mode & 1, eos = mode & 2;
      const std::vector<int32_t> ids = tok.encode(text, bos, eos);
      for (int32_t id : ids)
        FUZZ_CHECK(id >= 0 && id < n, "encode gave id " + std::to_string(id) + " of vocab " + std::to_string(n));
      std::string decoded = tok.decode(ids);
      radix::tok::Utf8Stream stream;
      std::string streamed;
      int32_t prev = tok.bos();
      for (int32_t id : ids) {
        streamed += stream.push(tok.piece(prev, id));
        prev = id;
      }
      streamed += stream.finish();
      FUZZ_CHECK(radix::io::is_valid_utf8(streamed), "Utf8Stream output is not valid UTF-8");
      FUZZ_CHECK(radix::io::is_valid_utf8(radix::tok::Utf8Stream::sanitize(decoded)),
                 "Utf8Stream::sanitize output is not valid UTF-8");
    }
  }
  // Ids out of range print nothing; decode of arbitrary ids does not crash.
  for (int32_t bad : {-1, n, n + 1, INT32_MAX, INT32_MIN}) {
    FUZZ_CHECK(tok.piece(tok.bos(), bad).empty(), "piece of out-of-range id " + std::to_string(bad));
    g_sink = static_cast<uint8_t>(tok.piece(bad, 0).size());  // an odd `prev`: no crash
  }
  const std::vector<int32_t> mixed = {-1, 0, 1, 2, n - 1, n, INT32_MAX, 3, 0};
  g_sink = static_cast<uint8_t>(tok.decode(mixed).size());
}

}  // namespace radix::fuzz
