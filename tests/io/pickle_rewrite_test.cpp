// The pickle pre-passes run before LibTorch's unpickler: single-item opcodes
// expanded, declared string lengths and memo entries checked against its size.

#include "support/fixtures.h"

#include "../../src/io/pickle_rewrite.h"

#include <gtest/gtest.h>

#include <string>

namespace qfx::io::detail {
namespace {

using namespace std::string_literals;

TEST(Pickle, SingleItemOpsBecomeTheirBatchedForms) {
  // pickle.dumps([1], protocol=2): PROTO 2, EMPTY_LIST, BINPUT 0, BININT1 1, APPEND, STOP
  const std::string list =
      "\x80\x02]q\x00K\x01"
      "a."s;
  EXPECT_EQ(expand_single_item_ops(list, "l"),
            "\x80\x02]q\x00(K\x01"
            "e."s);
  // pickle.dumps({'a': 1}, protocol=2): EMPTY_DICT, BINPUT 0, BINUNICODE 'a', BINPUT 1, BININT1 1, SETITEM
  const std::string dict =
      "\x80\x02}q\x00X\x01\x00\x00\x00"
      "aq\x01K\x01s."s;
  EXPECT_EQ(expand_single_item_ops(dict, "d"),
            "\x80\x02}q\x00(X\x01\x00\x00\x00"
            "aq\x01K\x01u."s);
}

TEST(Pickle, DeclaredSizesMustFitThePickle) {
  const std::string fits =
      "\x80\x02X\x03\x00\x00\x00"
      "abcq\x00."s;  // pickle.dumps('abc', protocol=2)
  expand_single_item_ops(fits, "'f.pt'");
  std::string error = test::error_of([&] {
    expand_single_item_ops(
        "\x80\x02X\x00\x00\x00\x7f"
        "abc."s,
        "'f.pt'");
  });
  EXPECT_NE(error.find("'f.pt': pickle opcode at byte 2 declares a string or bytes longer than the 8 bytes that "
                       "follow it (a corrupt file)"),
            std::string::npos)
      << error;
  error = test::error_of([&] {  // BINBYTES8 with a length near 2^64: no wrap-around
    expand_single_item_ops(
        "\x80\x02\x8e\xf8\xff\xff\xff\xff\xff\xff\xff"
        "abc."s,
        "'g.pt'");
  });
  EXPECT_NE(error.find("'g.pt': pickle opcode at byte 2 declares"), std::string::npos) << error;
  error = test::error_of([&] { expand_single_item_ops("\x80\x02NR."s, "'s.pt'"); });  // REDUCE of one value
  EXPECT_NE(error.find("'s.pt': pickle opcode at byte 3 takes more values than the pickle's stack holds"),
            std::string::npos)
      << error;
  error = test::error_of([&] {  // TUPLE2 of a value and a MARK (Python: "unexpected MARK found")
    expand_single_item_ops("\x80\x02N(N\x86."s, "'m.pt'");
  });
  EXPECT_NE(error.find("'m.pt': pickle opcode at byte 5 takes more values than the pickle's stack holds above its "
                       "last MARK"),
            std::string::npos)
      << error;
  error = test::error_of([&] {  // LONG_BINPUT of entry 2^30: LibTorch would grow its memo table to 16 GiB
    expand_single_item_ops("\x80\x02Nr\x00\x00\x00\x40."s, "'h.pt'");
  });
  EXPECT_NE(error.find("'h.pt': pickle opcode at byte 3 stores memo entry 1073741824 of a 9-byte pickle"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace qfx::io::detail
