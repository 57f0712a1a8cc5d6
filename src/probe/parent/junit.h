// --junit=FILE: the rows as a JUnit XML report, one testcase per row
// (docs/probe.md, "Output"), the layout CI systems and device farms ingest.
#pragma once

#include <string>
#include <vector>

#include "probe/parent/row_result.h"

namespace extmem::probe {

/// A <testsuites> document with one <testsuite name="extmem-probe"> (its
/// `hostname` attribute is `device`) and one <testcase classname="extmem.probe"
/// name="ROW" time="SECONDS"> per row. OK passes; UNSUPPORTED and SKIP carry
/// <skipped message="STATUS: why"/>; PARTIAL and FAIL carry <failure
/// type="STATUS" message="why"> with the RESULT line as text. Every row's
/// RESULT line (and measure: line) is in its <system-out>. Text is escaped,
/// and characters XML 1.0 forbids are replaced by U+FFFD.
std::string junit_xml(const std::vector<RowResult>& rows, const std::string& device);

}  // namespace extmem::probe
