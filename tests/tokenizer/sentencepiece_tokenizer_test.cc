// SentencePiece models through libsentencepiece: a tiny BPE model with byte fallback is
// trained at test time on a text written here.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "radix/tokenizer/sentencepiece_tokenizer.h"
#include "radix/tokenizer/tokenizer.h"
#include "radix/tokenizer/utf8_stream.h"

namespace radix::tok {
namespace {

class SentencePieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (std::filesystem::path(::testing::TempDir()) /
            ("radix_sp_" + std::to_string(::getpid())))
               .string();
    std::filesystem::create_directories(dir_);
    const std::string corpus = dir_ + "/corpus.txt";
    {
      std::ofstream f(corpus);
      const char* lines[] = {
          "Once upon a time, there was a little girl named Lily.",
          "She loved to play outside in the park with her friends.",
          "One day, she saw a big, red ball under the old tree.",
          "The sun was warm and the sky was blue and happy.",
          "Tom and Lily went to the shop to buy some milk and bread.",
          "They were very happy and they played all day long.",
          "Le caf\xC3\xA9 est tr\xC3\xA8s bon, na\xC3\xAFve \xC3\xA9t\xC3\xA9.",
      };
      for (int rep = 0; rep < 20; ++rep)
        for (const char* l : lines) f << l << "\n";
    }
    prefix_ = dir_ + "/tiny";
    const auto st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + corpus + " --model_prefix=" + prefix_ +
        " --vocab_size=320 --model_type=bpe --byte_fallback=true --character_coverage=1.0"
        " --normalization_rule_name=identity --remove_extra_whitespaces=false"
        " --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --num_threads=1 --minloglevel=2");
    train_error_ = st.ok() ? "" : st.ToString();
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  void SetUp() override { ASSERT_EQ(train_error_, "") << "training the tiny model failed"; }

  static std::string model() { return prefix_ + ".model"; }

  static inline std::string dir_, prefix_, train_error_;
};

TEST_F(SentencePieceTest, LoadsAndReportsIds) {
  auto tok = load_sentencepiece(model());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->vocab_size(), 320);
  EXPECT_EQ((*tok)->bos(), 1);
  EXPECT_EQ((*tok)->eos(), 2);
  const auto ids = (*tok)->encode("Once upon a time", true, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_TRUE((*tok)->encode("", false, false).empty());
  EXPECT_EQ((*tok)->encode("", true, true), (std::vector<int32_t>{1, 2}));
  auto sp = SentencePieceTokenizer::load(model());
  ASSERT_TRUE(sp.ok());
  EXPECT_TRUE((*sp)->adds_dummy_prefix());
}

TEST_F(SentencePieceTest, RoundTripsAndMatchesLibrary) {
  auto tok = load_sentencepiece(model());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(model()).ok());
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily.",
      "Hello world",
      " leading space",
      "two  spaces and trailing ",
      "caf\xC3\xA9 na\xC3\xAFve",                       // é ï: in the corpus
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",           // 日本語: byte fallback
      "emoji \xF0\x9F\x99\x82!",                        // 🙂: byte fallback
      "x",
  };
  for (const std::string& s : texts) {
    const auto ids = (*tok)->encode(s, false, false);
    const std::vector<int> lib = sp.EncodeAsIds(s);
    EXPECT_EQ(ids, std::vector<int32_t>(lib.begin(), lib.end())) << s;
    EXPECT_EQ((*tok)->decode(ids), s) << s;
    EXPECT_EQ((*tok)->decode(ids), sp.DecodeIds(std::vector<int>(ids.begin(), ids.end()))) << s;
    EXPECT_EQ((*tok)->decode((*tok)->encode(s, true, true)), s) << s;
    // Streaming the pieces gives the same text.
    Utf8Stream stream;
    std::string out;
    int32_t prev = (*tok)->bos();
    for (int32_t id : ids) out += stream.push((*tok)->piece(prev, id)), prev = id;
    out += stream.finish();
    EXPECT_EQ(out, s);
  }
  // 🙂 is 4 byte pieces.
  const auto emoji = (*tok)->encode("\xF0\x9F\x99\x82", false, false);
  EXPECT_GE(emoji.size(), 4u);
  EXPECT_EQ((*tok)->piece(emoji[emoji.size() - 1], 2), "");  // EOS prints nothing
}

TEST_F(SentencePieceTest, BadFilesAreErrors) {
  auto missing = load_sentencepiece(dir_ + "/missing.model");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIoError);
  const std::string junk = dir_ + "/junk.model";
  std::ofstream(junk) << "this is not a protobuf";
  auto bad = load_sentencepiece(junk);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(junk), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace radix::tok

namespace radix::tok {
namespace {

// Found by fuzz/sentencepiece_fuzzer: a model with a zero-length piece makes
// libsentencepiece throw from its trie builder; loading it is an error.
TEST(SentencePieceRegress, ZeroLengthPieceIsAnErrorNotATerminate) {
  const std::string path = std::string(RADIX_SOURCE_DIR) + "/fuzz/corpus/sentencepiece/regress_zero_length_piece.model";
  auto t = load_sentencepiece(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace radix::tok
