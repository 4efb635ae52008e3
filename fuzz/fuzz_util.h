// Helpers shared by the libFuzzer targets in fuzz/.
//
// The loaders read files by path, so each input is written to a file in a
// private per-process folder (under /dev/shm when it exists), then opened.
//
// Weight files are memory-mapped, and AddressSanitizer does not watch mmap'd
// memory: a read a few bytes past the end of the file lands in the rest of
// the page (zeros) and goes unnoticed. The fuzzers therefore link with
// -Wl,--wrap=mmap,--wrap=munmap: while a loader opens the fuzz input
// (FuzzMapGuard), a read-only private mapping of a regular file is replaced
// by a heap copy of exactly the mapped length, so ASan reports any byte read
// past the file's end as a heap-buffer-overflow.
//
// The exercise_* functions use what a loader accepted the way a program
// would (read every tensor's bytes; encode and decode text) and check the
// documented contracts; FUZZ_CHECK aborts (a crash for libFuzzer) when one
// does not hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace radix::io {
class WeightStore;
}
namespace radix::tok {
class Tokenizer;
}

namespace radix::fuzz {

// Prints the failed condition and the message, then aborts.
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);
#define FUZZ_CHECK(cond, msg) \
  do {                         \
    if (!(cond)) ::radix::fuzz::check_failed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)

// This process's private folder for input files (created on first use,
// removed at exit).
const std::string& work_dir();

// Writes `data` to work_dir()/name (replacing it) and returns the path.
std::string write_file(std::string_view name, const uint8_t* data, size_t size);

// While one lives, mmap(PROT_READ, MAP_PRIVATE) of a regular file returns a
// heap copy of the file's bytes (see above).
class FuzzMapGuard {
 public:
  FuzzMapGuard();
  ~FuzzMapGuard();
  FuzzMapGuard(const FuzzMapGuard&) = delete;
  FuzzMapGuard& operator=(const FuzzMapGuard&) = delete;
};

// Reads every tensor's bytes and checks the WeightStore contract (find()
// agrees with tensors(), bytes() is exactly shape.byte_size() long, unknown
// names are kNotFound, metadata and total_bytes() are readable).
void exercise_store(const radix::io::WeightStore& store);

// Encodes a few fixed strings plus `extra_text` (with and without BOS / EOS),
// checks every id is in [0, vocab_size), decodes, prints pieces (also of
// out-of-range ids, which must print nothing), and streams the pieces
// through Utf8Stream, whose output must be valid UTF-8.
void exercise_tokenizer(const radix::tok::Tokenizer& tok, std::string_view extra_text = {});

}  // namespace radix::fuzz
