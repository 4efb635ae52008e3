#include "radix/tokenizer/utf8_stream.h"

namespace radix::tok {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

// The well-formed sequences (Unicode Table 3-7): the second byte's range depends on
// the lead (no overlongs, no surrogates, nothing above U+10FFFF); later bytes 80..BF.
void Utf8Stream::feed(unsigned char b, std::string& out) {
  if (!pending_.empty()) {
    unsigned char lo = 0x80, hi = 0xBF;
    if (pending_.size() == 1) {
      switch (static_cast<unsigned char>(pending_[0])) {
        case 0xE0: lo = 0xA0; break;
        case 0xED: hi = 0x9F; break;
        case 0xF0: lo = 0x90; break;
        case 0xF4: hi = 0x8F; break;
        default: break;
      }
    }
    if (b >= lo && b <= hi) {
      pending_.push_back(static_cast<char>(b));
      if (--need_ == 0) {
        out += pending_;
        pending_.clear();
      }
      return;
    }
    // The sequence so far is a maximal invalid subpart: one U+FFFD, then `b` afresh.
    out += kReplacement;
    pending_.clear();
    need_ = 0;
  }
  if (b < 0x80) {
    out.push_back(static_cast<char>(b));
  } else if (b >= 0xC2 && b <= 0xDF) {
    need_ = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need_ = 2;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need_ = 3;
  } else {
    out += kReplacement;  // a stray continuation byte, C0, C1 or F5..FF
    return;
  }
  if (need_ > 0) pending_.push_back(static_cast<char>(b));
}

std::string Utf8Stream::push(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) feed(static_cast<unsigned char>(c), out);
  return out;
}

std::string Utf8Stream::finish() {
  std::string out;
  if (!pending_.empty()) out = kReplacement;
  pending_.clear();
  need_ = 0;
  return out;
}

std::string Utf8Stream::sanitize(std::string_view bytes) {
  Utf8Stream s;
  std::string out = s.push(bytes);
  out += s.finish();
  return out;
}

}  // namespace radix::tok
