// ExecutableCache: keys, the entry format's validation, atomic writes under
// concurrency, and I/O errors. Each test works in its own temp folder.
#include "radix/runtime/executable_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

namespace radix {
namespace {

namespace fs = std::filesystem;
using Kind = CacheLookup::Kind;

// A fresh folder named after the test and pid, removed at the end.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("radix_exe_cache_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  fs::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
int count_tmp_files(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tmp") ++n;
  return n;
}

// ---------------------------------------------------------------- CacheKey

uint64_t key_of(std::string_view n1, std::string_view v1, std::string_view n2, std::string_view v2) {
  CacheKey k;
  k.add(n1, v1).add(n2, v2);
  return k.digest();
}

TEST(CacheKey, SameFieldsSameDigest) {
  EXPECT_EQ(key_of("ir", "module", "target", "x86_64"), key_of("ir", "module", "target", "x86_64"));
  CacheKey a, b;
  a.add("opt", int64_t{3});
  b.add("opt", int64_t{3});
  EXPECT_EQ(a.digest(), b.digest());
  EXPECT_EQ(a.digest(), a.digest());  // digest() does not consume the state
}

TEST(CacheKey, DifferentFieldsDifferentDigest) {
  uint64_t base = key_of("ir", "module", "target", "x86_64");
  EXPECT_NE(base, key_of("ir", "module", "target", "aarch64"));  // value
  EXPECT_NE(base, key_of("ir", "module", "triple", "x86_64"));   // name
  EXPECT_NE(key_of("ab", "c", "x", "y"), key_of("a", "bc", "x", "y"));  // name/value boundary
  EXPECT_NE(key_of("a", "bc", "d", ""), key_of("a", "b", "cd", ""));    // field boundary
  CacheKey i1, i2, s;
  i1.add("opt", int64_t{2});
  i2.add("opt", int64_t{3});
  s.add("opt", std::string_view("\x02\0\0\0\0\0\0\0", 8));
  EXPECT_NE(i1.digest(), i2.digest());
  EXPECT_NE(i1.digest(), s.digest());  // an int field is not its bytes as a string
  CacheKey empty;
  EXPECT_NE(empty.digest(), i1.digest());
}

TEST(CacheKey, HexAndReferenceVector) {
  EXPECT_EQ(CacheKey::hex(0), "0000000000000000");
  EXPECT_EQ(CacheKey::hex(0xEF46DB3751D8E999ull), "ef46db3751d8e999");
  CacheKey k;
  EXPECT_EQ(CacheKey::hex(k.add("a", "b").digest()).size(), 16u);
  // Published xxHash test vector: XXH64("", seed 0).
  EXPECT_EQ(xxhash64(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(CacheKey().digest(), 0xEF46DB3751D8E999ull);  // no fields: the hash of nothing
}

// ---------------------------------------------------------------- round trips

TEST(ExecutableCache, RoundTripBinaryAndEmpty) {
  TempDir dir;
  ExecutableCache cache(dir.str());
  std::string bin("\x7f" "ELF\0\0\x01\xff\0", 9);
  for (int i = 0; i < 1000; ++i) bin.push_back(static_cast<char>(i * 7));
  ASSERT_TRUE(cache.store(1, bin).ok());
  ASSERT_TRUE(cache.store(2, "").ok());

  CacheLookup a = cache.load(1);
  ASSERT_EQ(a.kind, Kind::kHit) << a.reason;
  EXPECT_EQ(a.payload, bin);
  EXPECT_EQ(a.path, (dir / "0000000000000001.rxc").string());
  EXPECT_EQ(cache.entry_path(1), a.path);
  CacheLookup b = cache.load(2);
  ASSERT_EQ(b.kind, Kind::kHit) << b.reason;
  EXPECT_TRUE(b.payload.empty());
  EXPECT_EQ(fs::file_size(b.path), ExecutableCache::kHeaderSize);
  EXPECT_EQ(count_tmp_files(dir.str()), 0);
}

TEST(ExecutableCache, MissingKeyIsMiss) {
  TempDir dir;
  ExecutableCache cache(dir.str());
  EXPECT_EQ(cache.load(42).kind, Kind::kMiss);
  ExecutableCache absent((dir / "not/there").string());  // the folder need not exist
  CacheLookup r = absent.load(42);
  EXPECT_EQ(r.kind, Kind::kMiss);
  EXPECT_TRUE(r.reason.empty());
}

TEST(ExecutableCache, StoreCreatesNestedFolders) {
  TempDir dir;
  ExecutableCache cache((dir / "a/b/c").string());
  ASSERT_TRUE(cache.store(7, "payload").ok());
  EXPECT_TRUE(fs::is_directory(dir / "a/b/c"));
  CacheLookup r = cache.load(7);
  ASSERT_EQ(r.kind, Kind::kHit) << r.reason;
  EXPECT_EQ(r.payload, "payload");
}

// ---------------------------------------------------------------- rejection

class Rejection : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cache.store(kKey, payload).ok());
    path = cache.entry_path(kKey);
    bytes = read_file(path);
    ASSERT_EQ(bytes.size(), ExecutableCache::kHeaderSize + payload.size());
  }
  // Loads kKey, expects a rejection whose reason names the path and `word`.
  void expect_rejected(const std::string& word, uint64_t key = kKey) {
    CacheLookup r = cache.load(key);
    EXPECT_EQ(r.kind, Kind::kRejected);
    EXPECT_TRUE(r.payload.empty());
    EXPECT_NE(r.reason.find(cache.entry_path(key)), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find(word), std::string::npos) << r.reason;
  }

  static constexpr uint64_t kKey = 0x1234abcd;
  TempDir dir;
  ExecutableCache cache{dir.str()};
  std::string payload = std::string("compiled\0code", 13) + std::string(200, 'x');
  std::string path, bytes;
};

TEST_F(Rejection, FlippedPayloadByteIsChecksumMismatch) {
  bytes[ExecutableCache::kHeaderSize + 5] ^= 0x01;
  write_file(path, bytes);
  expect_rejected("checksum");
}

TEST_F(Rejection, TruncatedFile) {
  write_file(path, bytes.substr(0, bytes.size() - 10));
  expect_rejected("truncated");
  write_file(path, bytes.substr(0, 20));  // not even a whole header
  expect_rejected("truncated");
  write_file(path, "");
  expect_rejected("truncated");
}

TEST_F(Rejection, TrailingBytes) {
  write_file(path, bytes + "extra");
  expect_rejected("trailing");
}

TEST_F(Rejection, OtherFormatVersion) {
  bytes[8] = 2;  // bytes 8..11: version 2, little-endian
  write_file(path, bytes);
  expect_rejected("version");
}

TEST_F(Rejection, ForeignFiles) {
  write_file(path, "this is not a cache entry but some random text, long enough for a header\n");
  expect_rejected("magic");
  // A valid entry for another key copied to this key's path.
  ASSERT_TRUE(cache.store(kKey + 1, "other").ok());
  fs::copy_file(cache.entry_path(kKey + 1), path, fs::copy_options::overwrite_existing);
  expect_rejected("foreign");
}

TEST_F(Rejection, UnreadableEntryIsRejected) {
  fs::remove(path);
  fs::create_directory(path);  // open succeeds on a folder, read fails with EISDIR
  expect_rejected("read failed");
  fs::remove(path);
}

TEST_F(Rejection, RemoveThenStoreHitsAgain) {
  bytes[ExecutableCache::kHeaderSize] ^= 0xff;
  write_file(path, bytes);
  expect_rejected("checksum");
  cache.remove(kKey);
  EXPECT_EQ(cache.load(kKey).kind, Kind::kMiss);
  cache.remove(kKey);  // missing is fine
  ASSERT_TRUE(cache.store(kKey, "recompiled").ok());
  CacheLookup r = cache.load(kKey);
  ASSERT_EQ(r.kind, Kind::kHit) << r.reason;
  EXPECT_EQ(r.payload, "recompiled");
}

// ---------------------------------------------------------------- concurrency

// A hit must be one writer's complete payload: 1 MiB of one byte value < n.
std::string check_payload(const CacheLookup& r, int writers) {
  if (r.kind == Kind::kRejected) return "rejected: " + r.reason;
  if (r.kind == Kind::kMiss) return "";
  const std::string& p = r.payload;
  if (p.size() != (1u << 20)) return "hit of " + std::to_string(p.size()) + " bytes";
  if (static_cast<unsigned char>(p[0]) >= writers) return "unknown payload byte";
  if (std::count(p.begin(), p.end(), p[0]) != static_cast<long>(p.size())) return "mixed payload";
  return "";
}

// Thread-safe error tally: the count and the first message.
struct Errors {
  std::mutex mu;
  int count = 0;
  std::string first;
  void add(std::string e) {
    if (e.empty()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (count++ == 0) first = std::move(e);
  }
};

TEST(ExecutableCache, ConcurrentWritersAndReaders) {
  TempDir dir;
  ExecutableCache cache(dir.str());
  constexpr int kWriters = 8, kReaders = 2, kStores = 50;
  constexpr uint64_t kKey = 99;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> hits{0};
  Errors errors;

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      std::string payload(1 << 20, static_cast<char>(w));
      for (int i = 0; i < kStores; ++i)
        if (Status s = cache.store(kKey, payload); !s.ok()) errors.add(s.to_string());
      --writers_left;
    });
  for (int r = 0; r < kReaders; ++r)
    threads.emplace_back([&] {
      while (writers_left.load() > 0) {
        CacheLookup l = cache.load(kKey);
        errors.add(check_payload(l, kWriters));
        if (l.kind == Kind::kHit) ++hits;
      }
    });
  for (auto& t : threads) t.join();

  EXPECT_EQ(errors.count, 0) << "first: " << errors.first;
  CacheLookup last = cache.load(kKey);
  EXPECT_EQ(last.kind, Kind::kHit);
  EXPECT_EQ(check_payload(last, kWriters), "");
  EXPECT_EQ(count_tmp_files(dir.str()), 0);
  RecordProperty("reader_hits_during_writes", hits.load());
}

TEST(ExecutableCache, ConcurrentWriterProcesses) {
  TempDir dir;
  ExecutableCache cache(dir.str());
  constexpr int kProcs = 4;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // child: no gtest assertions, just an exit code
      std::string payload(1 << 20, static_cast<char>(p));
      for (int i = 0; i < 20; ++i)
        if (!cache.store(5, payload).ok()) ::_exit(1);
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  // Load while the children write; reap each child as it exits.
  Errors errors;
  std::vector<int> exit_codes(kProcs, -1);
  for (int running = kProcs; running > 0;) {
    errors.add(check_payload(cache.load(5), kProcs));
    for (int p = 0; p < kProcs; ++p) {
      int st = 0;
      if (exit_codes[p] == -1 && ::waitpid(pids[p], &st, WNOHANG) == pids[p]) {
        exit_codes[p] = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        --running;
      }
    }
  }
  EXPECT_EQ(exit_codes, std::vector<int>(kProcs, 0));
  EXPECT_EQ(errors.count, 0) << "first: " << errors.first;
  EXPECT_EQ(cache.load(5).kind, Kind::kHit);
  EXPECT_EQ(count_tmp_files(dir.str()), 0);
}

// ---------------------------------------------------------------- I/O errors

TEST(ExecutableCache, StoreUnderRegularFileFails) {
  TempDir dir;
  write_file((dir / "file").string(), "x");
  std::string bad = (dir / "file/sub").string();
  ExecutableCache cache(bad);
  Status s = cache.store(1, "payload");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kIoError);
  EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  EXPECT_EQ(cache.load(1).kind, Kind::kMiss);  // no entry can exist there
}

TEST(ExecutableCache, FailedRenameLeavesNoTempFile) {
  TempDir dir;
  ExecutableCache cache(dir.str());
  fs::create_directories(cache.entry_path(3) + "/occupied");  // rename() cannot replace it
  Status s = cache.store(3, "payload");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kIoError);
  EXPECT_NE(s.message().find(cache.entry_path(3)), std::string::npos) << s.message();
  EXPECT_EQ(count_tmp_files(dir.str()), 0);
}

}  // namespace
}  // namespace radix
