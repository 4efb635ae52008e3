// Utf8Stream: valid UTF-8 text out of a stream of token pieces.
//
// A character can span several tokens (byte-fallback tokens <0xE6><0x97><0xA5> make
// one CJK character), so printing each piece as it comes would print broken bytes.
// push() returns only complete, valid UTF-8: an incomplete multi-byte sequence at the
// end is held back until the next push completes it. Invalid bytes come out as U+FFFD
// (one per maximal invalid subpart, as the Unicode standard and WHATWG recommend);
// finish() flushes a dangling incomplete sequence as U+FFFD.
#pragma once

#include <string>
#include <string_view>

namespace radix::tok {

class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  // Ends the stream: the held-back partial sequence (if any) as U+FFFD; then resets.
  std::string finish();
  // Bytes held back, waiting for the rest of their character.
  size_t pending() const { return pending_.size(); }

  // `bytes` with every invalid sequence replaced by U+FFFD.
  static std::string sanitize(std::string_view bytes);

 private:
  void feed(unsigned char b, std::string& out);

  std::string pending_;  // the start of an incomplete, so far valid, sequence
  size_t need_ = 0;      // continuation bytes still missing
};

}  // namespace radix::tok
