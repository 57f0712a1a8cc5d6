// extmem::xml_text: the one escaper behind the JUnit file, the report's HTML
// page and the watch plot. Each case is a byte string a real document met.
#include "core/xml_text.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using extmem::xml_text;
const std::string kFffd = "\xEF\xBF\xBD";

TEST(XmlText, EscapesTheFiveSpecials) {
  EXPECT_EQ(xml_text(R"(a&b<c>d"e'f)"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
}

TEST(XmlText, KeepsWhitespaceAsCharacterReferences) { EXPECT_EQ(xml_text("a\tb\nc\rd"), "a&#9;b&#10;c&#13;d"); }

TEST(XmlText, ControlBytesBecomeReplacementCharacters) {
  EXPECT_EQ(xml_text(std::string("a\0b\x1b[0m\x7f", 8)), "a" + kFffd + "b" + kFffd + "[0m" + kFffd);
}

TEST(XmlText, KeepsValidUtf8) { EXPECT_EQ(xml_text("µs → 𝄞"), "µs → 𝄞"); }

TEST(XmlText, InvalidUtf8BecomesOneReplacementPerByte) {
  EXPECT_EQ(xml_text("\xff"), kFffd);                       // never valid
  EXPECT_EQ(xml_text("\xc0\xaf"), kFffd + kFffd);           // overlong '/'
  EXPECT_EQ(xml_text("\xed\xa0\x80"), kFffd + kFffd + kFffd);  // a UTF-16 surrogate
  EXPECT_EQ(xml_text("\xf4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  EXPECT_EQ(xml_text("ab\xe2\x86"), "ab" + kFffd + kFffd);  // cut at the end, as a truncated label is
}

}  // namespace
