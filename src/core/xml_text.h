// One escaper for every XML/HTML document extmem writes (JUnit, the report's
// HTML page, the watch SVG plot): the text comes from drivers, command lines
// and process names, i.e. arbitrary bytes, and one stray byte would make the
// whole document unreadable.
#pragma once

#include <string>
#include <string_view>

namespace extmem {

/// `s` as XML 1.0 character data, safe in text and in quoted attributes:
/// & < > " ' become entity references; tab, newline and carriage return
/// become character references (so attributes keep them); valid UTF-8
/// sequences are kept; other C0 controls, DEL and bytes that are not valid
/// UTF-8 each become U+FFFD (XML 1.0 section 2.2 "Characters" forbids the
/// controls; invalid UTF-8 is not a character at all). Never fails.
std::string xml_text(std::string_view s);

}  // namespace extmem
