#include "radix/tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <fstream>
#include <utility>

namespace radix::tok {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ ", SentencePiece's

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer()
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::load(
    const std::string& path) {
  if (!std::ifstream(path, std::ios::binary))
    return Status(ErrorCode::kIoError, "cannot open SentencePiece model file '" + path + "'");
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  // libsentencepiece reports most bad models as a status, but some (a
  // zero-length piece, found by fuzz/sentencepiece_fuzzer) throw from its
  // trie builder: both are errors naming the file, never a terminate.
  try {
    const auto st = t->sp_->Load(path);
    if (!st.ok())
      return invalid_argument("SentencePiece model file '" + path + "': " + st.ToString());
  } catch (const std::exception& e) {
    return invalid_argument("SentencePiece model file '" + path + "': " + e.what());
  }
  t->vocab_size_ = t->sp_->GetPieceSize();
  t->bos_ = t->sp_->bos_id();
  t->eos_ = t->sp_->eos_id();
  // add_dummy_prefix lives in the model proto, whose header Debian does not ship: probe.
  // With the prefix, "a" encodes to "▁a", or "▁" "a", or byte pieces starting <0xE2>.
  const std::vector<std::string> probe = t->sp_->EncodeAsPieces("a");
  t->dummy_prefix_ = !probe.empty() && (probe[0].compare(0, kSpaceMark.size(), kSpaceMark) == 0 ||
                                        probe[0] == "<0xE2>");
  return t;
}

Result<std::unique_ptr<Tokenizer>> load_sentencepiece(const std::string& path) {
  RADIX_ASSIGN_OR_RETURN(auto t, SentencePieceTokenizer::load(path));
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text, bool bos,
                                                    bool eos) const {
  std::vector<int> ids;
  if (!text.empty() && !sp_->Encode(text, &ids).ok()) ids.clear();
  std::vector<int32_t> out;
  out.reserve(ids.size() + 2);
  if (bos && bos_ >= 0) out.push_back(bos_);
  out.insert(out.end(), ids.begin(), ids.end());
  if (eos && eos_ >= 0) out.push_back(eos_);
  return out;
}

std::string SentencePieceTokenizer::piece(int32_t prev, int32_t token) const {
  if (token < 0 || token >= vocab_size_) return {};
  if (sp_->IsControl(token)) return {};
  if (sp_->IsUnknown(token)) return std::string(kUnknownSurface);
  const std::string& p = sp_->IdToPiece(token);
  if (sp_->IsByte(token) && p.size() == 6 && hex_digit(p[3]) >= 0 && hex_digit(p[4]) >= 0)
    return std::string(1, static_cast<char>(hex_digit(p[3]) * 16 + hex_digit(p[4])));
  std::string s;
  s.reserve(p.size());
  for (size_t i = 0; i < p.size();) {
    if (std::string_view(p).substr(i, kSpaceMark.size()) == kSpaceMark) {
      s.push_back(' ');
      i += kSpaceMark.size();
    } else {
      s.push_back(p[i++]);
    }
  }
  if (prev == bos_ && dummy_prefix_ && !s.empty() && s[0] == ' ') s.erase(0, 1);
  return s;
}

}  // namespace radix::tok
