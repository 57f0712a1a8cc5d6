// extmem watch, the parts without a run: procfs parsers, mapping classes,
// durations, fits and summaries, the series formats, the SVG, and the sampler
// on this test process and a child of it.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "extmem/os/fd.h"
#include "extmem/watch/percent.h"
#include "extmem/watch/mapping_classes.h"
#include "extmem/watch/plot.h"
#include "extmem/watch/procfs.h"
#include "extmem/watch/sampler.h"
#include "extmem/watch/series.h"
#include "extmem/watch/summary.h"

extern char** environ;

namespace {

using namespace extmem::watch;
using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------- /proc/PID/stat

// A comm holding spaces and parentheses is cut at the last ')', and the fields after it line up.
TEST(WatchProcfs, StatCommWithParenthesesAndSpaces) {
  auto st = parse_stat("4242 (a) b (c)) S 17 4242 4242 0 -1 4194304 120 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200\n");
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->comm, "a) b (c)");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 17);
  EXPECT_EQ(st->flags, 4194304u);
  EXPECT_EQ(st->start_ticks, 987654u);
}

// The real /proc/self/stat parses, with our pid and parent.
TEST(WatchProcfs, StatOfThisProcess) {
  auto st = parse_stat(slurp("/proc/self/stat"));
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(st->pid, getpid());
  EXPECT_EQ(st->ppid, getppid());
  EXPECT_GT(st->start_ticks, 0u);
}

// Truncated or malformed stat lines are refused with the field named.
TEST(WatchProcfs, StatRejectsMalformed) {
  for (const char* text : {"", "12", "12 (x", "x (y) S 1", "12 (x) S", "12 (x) S 1 2 3", "0 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 5",
                           "12 (x) S -4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 5"}) {
    auto st = parse_stat(text);
    EXPECT_FALSE(st) << text;
  }
}

// ---------------------------------------------------------------- /proc/PID/status

constexpr const char* kStatus =
    "Name:\tgrower\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t100\nPid:\t100\nPPid:\t1\n"
    "VmPeak:\t  10000 kB\nVmSize:\t   9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n"
    "RssAnon:\t     500 kB\nRssFile:\t     400 kB\nRssShmem:\t     124 kB\nVmSwap:\t       8 kB\n"
    "Threads:\t3\nSigQ:\t0/1000\n";

// Every used field is read in KiB; unused lines are skipped.
TEST(WatchProcfs, StatusFields) {
  auto s = parse_status(kStatus);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->threads, 3u);
  EXPECT_EQ(s->vm_rss_kib, 1024u);
  EXPECT_EQ(s->vm_hwm_kib, 2048u);
  EXPECT_EQ(s->rss_anon_kib, 500u);
  EXPECT_EQ(s->rss_file_kib, 400u);
  EXPECT_EQ(s->rss_shmem_kib, 124u);
  EXPECT_EQ(s->vm_swap_kib, 8u);
}

// A process without an address space (kernel thread, exiting) has no Vm lines: empty, not zero.
TEST(WatchProcfs, StatusWithoutVmLines) {
  auto s = parse_status("Name:\tkworker/0:1\nPPid:\t2\nThreads:\t1\n");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->vm_rss_kib.has_value());
  EXPECT_FALSE(s->vm_swap_kib.has_value());
  EXPECT_EQ(s->threads, 1u);
}

// A used line with a bad value is an error quoting the line, never a silent 0.
TEST(WatchProcfs, StatusRejectsBadValues) {
  for (const char* text : {"VmRSS:\tabc kB\n", "VmRSS:\t12 MB\n", "VmRSS:\t12\n", "Threads:\tx\n", "PPid:\t-1\n"}) {
    auto s = parse_status(text);
    ASSERT_FALSE(s) << text;
    EXPECT_NE(s.error().detail.find(std::string(text).substr(0, 5)), std::string::npos);
  }
}

// The real /proc/self/status parses and reports a plausible RSS.
TEST(WatchProcfs, StatusOfThisProcess) {
  auto s = parse_status(slurp("/proc/self/status"));
  ASSERT_TRUE(s) << s.error().message();
  ASSERT_TRUE(s->vm_rss_kib.has_value());
  EXPECT_GT(*s->vm_rss_kib, 100u);
  EXPECT_GE(*s->vm_hwm_kib, *s->vm_rss_kib);
  EXPECT_EQ(s->ppid, getppid());
}

// ---------------------------------------------------------------- smaps_rollup

constexpr const char* kRollup6 =
    "55d0c0000000-7ffc4a5ff000 ---p 00000000 00:00 0                          [rollup]\n"
    "Rss:                2000 kB\nPss:                1000 kB\nPss_Dirty:           300 kB\n"
    "Pss_Anon:            600 kB\nPss_File:            300 kB\nPss_Shmem:           100 kB\n"
    "Shared_Clean:        900 kB\nSwapPss:               7 kB\n";

// Only the Pss: line is read: the kernel 5.3/6.0 breakdown lines are parts of it.
TEST(WatchProcfs, PssIsTheTotalLineOnly) {
  auto pss = parse_pss_total(kRollup6);
  ASSERT_TRUE(pss) << pss.error().message();
  EXPECT_EQ(*pss, 1000u);
}

// Negative control: adding every Pss* line, the trap docs/watch.md names, would more than double it.
TEST(WatchProcfs, SummingEveryPssLineDoubleCounts) {
  std::uint64_t sum = 0;
  std::istringstream in(kRollup6);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Pss", 0) == 0) sum += std::stoull(line.substr(line.find(':') + 1));
  EXPECT_EQ(sum, 2300u);
  EXPECT_NE(sum, *parse_pss_total(kRollup6));
}

// Older kernels (no breakdown lines) and a missing line.
TEST(WatchProcfs, PssOldKernelAndMissing) {
  EXPECT_EQ(*parse_pss_total("Rss: 10 kB\nPss: 7 kB\n"), 7u);
  EXPECT_FALSE(parse_pss_total("Rss: 10 kB\nPss_Anon: 7 kB\n"));
  EXPECT_FALSE(parse_pss_total("Pss: lots\n"));
}

// The real smaps_rollup of this process has a Pss no larger than its Rss.
TEST(WatchProcfs, PssOfThisProcess) {
  auto pss = parse_pss_total(slurp("/proc/self/smaps_rollup"));
  ASSERT_TRUE(pss) << pss.error().message();
  EXPECT_GT(*pss, 0u);
}

// Lines are counted by newline; a last line without one still counts.
TEST(WatchProcfs, CountLines) {
  EXPECT_EQ(count_lines(""), 0u);
  EXPECT_EQ(count_lines("a\n"), 1u);
  EXPECT_EQ(count_lines("a\nb"), 2u);
  EXPECT_EQ(count_lines("a\nb\n\n"), 3u);
}

// ProcessDir counts our own mappings and fds, and sees a mapping we add.
TEST(WatchProcfs, ProcessDirOfThisProcess) {
  auto dir = ProcessDir::open(getpid());
  ASSERT_TRUE(dir) << dir.error().message();
  std::string buf;
  auto before = dir->mapping_count(buf);
  ASSERT_TRUE(before) << before.error().message();
  auto fd = extmem::os::create_memfd("watch-unit", 4096);
  ASSERT_TRUE(fd);
  auto map = extmem::os::Mapping::map(fd->get(), 4096, MAP_SHARED);
  ASSERT_TRUE(map);
  auto after = dir->mapping_count(buf);
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *before + 1);
  auto fds = dir->fd_count();
  ASSERT_TRUE(fds) << fds.error().message();
  EXPECT_GE(*fds, 4u);  // 0, 1, 2 and the memfd
}

// A pid that does not exist is "gone" (ENOENT), with the step in the error.
TEST(WatchProcfs, MissingProcessIsGone) {
  auto dir = ProcessDir::open(0x7ffffff0);
  ASSERT_FALSE(dir);
  EXPECT_TRUE(is_gone(dir.error()));
  EXPECT_EQ(dir.error().message(), "open /proc/2147483632: ENOENT (2)");
}

// kcmp(KCMP_VM): a process shares its own address space, not a spawned child's.
TEST(WatchProcfs, SharesAddressSpace) {
  EXPECT_TRUE(shares_address_space(getpid(), getpid()));
  pid_t child = -1;
  char arg0[] = "sleep", arg1[] = "5";
  char* argv[] = {arg0, arg1, nullptr};
  ASSERT_EQ(posix_spawnp(&child, "sleep", nullptr, nullptr, argv, environ), 0);
  EXPECT_FALSE(shares_address_space(child, getpid()));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

// A process that has exited but is not reaped yet keeps its pid and /proc entry but
// no address space: its maps read empty, and kcmp finds it unlike every other (so
// poll asks mapping_count whether a task it cannot match has ended).
TEST(WatchProcfs, AnExitedUnreapedProcessHasNoMappingsLeft) {
  pid_t child = -1;
  char arg0[] = "true";
  char* argv[] = {arg0, nullptr};
  ASSERT_EQ(posix_spawnp(&child, "true", nullptr, nullptr, argv, environ), 0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);  // a zombie, still ours to reap
  auto dir = ProcessDir::open(child);
  ASSERT_TRUE(dir) << dir.error().message();
  std::string buf;
  auto mappings = dir->mapping_count(buf);
  ASSERT_TRUE(mappings) << mappings.error().message();
  EXPECT_EQ(*mappings, 0u);
  auto own = ProcessDir::open(getpid());
  ASSERT_TRUE(own);
  EXPECT_GT(own->mapping_count(buf).value(), 0u);
  waitpid(child, nullptr, 0);
}

// ---------------------------------------------------------------- mapping classes

// Each kind of maps path lands in its documented class.
TEST(WatchClasses, PathToClass) {
  EXPECT_EQ(mapping_class(""), "anon");
  EXPECT_EQ(mapping_class("/dev/zero (deleted)"), "anon");
  EXPECT_EQ(mapping_class("[anon:scudo:primary]"), "anon:scudo:primary");
  EXPECT_EQ(mapping_class("[heap]"), "heap");
  EXPECT_EQ(mapping_class("[stack]"), "stack");
  EXPECT_EQ(mapping_class("[stack:1234]"), "stack");
  EXPECT_EQ(mapping_class("[vdso]"), "vdso");
  EXPECT_EQ(mapping_class("[vvar]"), "vdso");
  EXPECT_EQ(mapping_class("[vsyscall]"), "vdso");
  EXPECT_EQ(mapping_class("[uprobes]"), "[uprobes]");
  EXPECT_EQ(mapping_class("/memfd:descriptor set (deleted)"), "memfd:descriptor set");
  EXPECT_EQ(mapping_class("/memfd:wayland-shm"), "memfd:wayland-shm");
  EXPECT_EQ(mapping_class("/dmabuf:"), "dmabuf");
  EXPECT_EQ(mapping_class("anon_inode:dmabuf"), "dmabuf");
  EXPECT_EQ(mapping_class("/dev/dri/renderD128"), "/dev/dri/renderD128");
  EXPECT_EQ(mapping_class("/dev/nvidia0"), "/dev/nvidia0");
  EXPECT_EQ(mapping_class("/dev/kgsl-3d0"), "/dev/kgsl-3d0");
  EXPECT_EQ(mapping_class("/dev/mali0"), "/dev/mali0");
  EXPECT_EQ(mapping_class("/dev/shm/pulse-shm-1 (deleted)"), "shm");
  EXPECT_EQ(mapping_class("/SYSV00000000 (deleted)"), "sysv-shm");
  EXPECT_EQ(mapping_class("anon_inode:i915.gem"), "anon_inode:i915.gem");
  EXPECT_EQ(mapping_class("/usr/lib/x86_64-linux-gnu/libc.so.6"), "file");
  EXPECT_EQ(mapping_class("/tmp/a file (deleted)"), "file");
  EXPECT_EQ(mapping_class("socket:[123]"), "other");
}

// A census counts every line, per class, sorted; unparseable lines are kept as "unparsed".
TEST(WatchClasses, CensusOfText) {
  const char* text =
      "00400000-00401000 r-xp 00000000 08:01 10 /usr/bin/x\n"
      "7f0000000000-7f0000001000 rw-s 00000000 00:01 4242 /memfd:grower (deleted)\n"
      "7f0000002000-7f0000003000 rw-s 00000000 00:01 4243 /memfd:grower (deleted)\n"
      "7f0000004000-7f0000005000 rw-p 00000000 00:00 0\n"
      "garbage\n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]";
  MapCensus c = census_of(text);
  EXPECT_EQ(c.total, 6u);
  std::vector<std::pair<std::string, std::uint64_t>> want = {
      {"anon", 1}, {"file", 1}, {"memfd:grower", 2}, {"stack", 1}, {"unparsed", 1}};
  EXPECT_EQ(c.classes, want);
}

// The census of this process agrees with the plain line count.
TEST(WatchClasses, CensusOfThisProcessMatchesCount) {
  const std::string text = slurp("/proc/self/maps");
  MapCensus c = census_of(text);
  EXPECT_EQ(c.total, count_lines(text));
  std::uint64_t sum = 0;
  for (const auto& [name, n] : c.classes) sum += n;
  EXPECT_EQ(sum, c.total);
  EXPECT_EQ(std::count_if(c.classes.begin(), c.classes.end(), [](const auto& p) { return p.first == "unparsed"; }), 0);
}

// ---------------------------------------------------------------- percentages

// Percentages with or without %, within (0, 100].
TEST(WatchPercent, WithOrWithoutSign) {
  EXPECT_DOUBLE_EQ(*parse_percent("1.5"), 0.015);
  EXPECT_DOUBLE_EQ(*parse_percent("20%"), 0.2);
  EXPECT_DOUBLE_EQ(*parse_percent("100"), 1.0);
  for (const char* text : {"0", "101", "-5", "x", "%", ""}) EXPECT_FALSE(parse_percent(text)) << text;
}

// ---------------------------------------------------------------- fits and summaries

// A straight line is fitted exactly; points before the warm-up are ignored.
TEST(WatchSummary, FitIsLeastSquares) {
  std::vector<std::pair<double, double>> pts;
  for (int i = 0; i <= 100; ++i) pts.emplace_back(i * 0.1, i < 20 ? 500.0 : 3.0 * (i * 0.1) + 7.0);
  Fit f = fit_slope(pts, 2.0);
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.per_s, 3.0, 1e-9);
  EXPECT_EQ(f.points, 81u);
  // Negative control: fitting from 0 includes the warm-up outliers and the slope is far off.
  EXPECT_LT(fit_slope(pts, 0.0).per_s, 2.0);
}

// Fewer than two distinct times: no fit.
TEST(WatchSummary, FitNeedsTwoTimes) {
  std::vector<std::pair<double, double>> one = {{1.0, 5.0}, {1.0, 6.0}};
  EXPECT_FALSE(fit_slope(one, 0).valid);
  EXPECT_FALSE(fit_slope({}, 0).valid);
}

ProcessSample row(double t, pid_t pid, std::uint64_t rss, std::optional<std::uint64_t> maps,
                  std::vector<std::pair<std::string, std::uint64_t>> classes = {}) {
  ProcessSample s;
  s.t = t;
  s.pid = pid;
  s.ppid = 1;
  s.start_ticks = 100 + static_cast<std::uint64_t>(pid);
  s.comm = "p" + std::to_string(pid);
  s.rss_kib = rss;
  s.hwm_kib = rss;
  s.mappings = maps;
  s.classes_taken = !classes.empty();
  s.classes = std::move(classes);
  return s;
}

// Peaks, tenths, slopes and the class that grew most, on a synthetic run.
TEST(WatchSummary, SyntheticRun) {
  History h;
  for (int i = 0; i <= 100; ++i) {
    const double t = i * 0.1;
    std::vector<ProcessSample> rows;
    // pid 10: RSS +40 KiB/s, mappings +10/s counted every other sample; memfd class grows, anon flat.
    const std::uint64_t memfd = static_cast<std::uint64_t>(i);
    rows.push_back(row(t, 10, 1000 + 4 * static_cast<std::uint64_t>(i),
                       i % 2 == 0 ? std::optional<std::uint64_t>(50 + i) : std::nullopt,
                       i % 2 == 0 ? std::vector<std::pair<std::string, std::uint64_t>>{{"anon", 50}, {"memfd:x", memfd}}
                                  : std::vector<std::pair<std::string, std::uint64_t>>{}));
    if (i >= 30 && i <= 60) rows.push_back(row(t, 11, 5000, 20));  // a child that lives 3..6 s
    h.add(rows);
  }
  auto sums = summarize(h, Warmup{});
  ASSERT_EQ(sums.size(), 2u);
  const ProcessSummary& a = sums[0];
  EXPECT_EQ(a.pid, 10);
  EXPECT_EQ(a.peak_rss_kib, 1400u);
  EXPECT_EQ(a.peak_hwm_kib, 1400u);
  EXPECT_EQ(a.peak_mappings, 150u);
  ASSERT_TRUE(a.rss_fit.valid);
  EXPECT_NEAR(a.rss_fit.per_s, 40.0, 1e-6);
  EXPECT_NEAR(a.rss_fit.from_s, 2.0, 1e-9);
  ASSERT_TRUE(a.mappings_fit.valid);
  EXPECT_NEAR(a.mappings_fit.per_s, 10.0, 1e-6);
  ASSERT_EQ(a.tenths.size(), 11u);
  EXPECT_EQ(a.tenths[0].rss_kib, 1000u);
  EXPECT_EQ(a.tenths[5].rss_kib, 1200u);
  EXPECT_EQ(a.tenths[10].rss_kib, 1400u);
  EXPECT_EQ(a.tenths[10].mappings, 150u);
  ASSERT_TRUE(a.class_grew_most.has_value());
  EXPECT_EQ(a.class_grew_most->name, "memfd:x");
  EXPECT_NEAR(a.class_grew_most->per_s, 10.0, 1e-6);
  EXPECT_EQ(a.class_grew_most->delta, 80);
  EXPECT_TRUE(a.seen_at_end);
  const ProcessSummary& b = sums[1];
  EXPECT_EQ(b.pid, 11);
  EXPECT_FALSE(b.seen_at_end);
  EXPECT_NEAR(b.first_s, 3.0, 1e-9);
  EXPECT_NEAR(b.last_s, 6.0, 1e-9);
  EXPECT_NEAR(b.rss_fit.per_s, 0.0, 1e-9);
  EXPECT_FALSE(b.class_grew_most.has_value());
  EXPECT_EQ(h.tree_peak_rss_kib(), 1000u + 4 * 60 + 5000);
}

// Growing steadily for 1.9 s is not enough for a slope (the 2 s minimum); for
// 2.0 s it is. The reason is named in the text and in the JSON.
TEST(WatchSummary, SlopeOnlyForProcessesSeenLongEnough) {
  History h;
  for (int i = 0; i <= 20; ++i) {
    std::vector<ProcessSample> rows;
    rows.push_back(row(i * 0.1, 20, 1000 + 100 * static_cast<std::uint64_t>(i), 40 + i));  // seen 0.0-2.0 s
    if (i <= 19) rows.push_back(row(i * 0.1, 21, 1000 + 100 * static_cast<std::uint64_t>(i), 40 + i));  // 0.0-1.9 s
    h.add(rows);
  }
  Summary s;
  s.pids = {20};
  s.processes = summarize(h, Warmup{});
  ASSERT_EQ(s.processes.size(), 2u);
  const ProcessSummary& long_enough = s.processes[0];
  const ProcessSummary& brief = s.processes[1];
  ASSERT_EQ(brief.pid, 21);
  EXPECT_TRUE(long_enough.rss_fit.valid);
  EXPECT_EQ(long_enough.rss_fit.gap, FitGap::none);
  EXPECT_NEAR(long_enough.rss_fit.per_s, 1000.0, 1e-6);
  EXPECT_FALSE(brief.rss_fit.valid);
  EXPECT_FALSE(brief.mappings_fit.valid);
  EXPECT_EQ(brief.rss_fit.gap, FitGap::seen_too_briefly);
  EXPECT_EQ(brief.mappings_fit.gap, FitGap::seen_too_briefly);
  const std::string text = summary_text(s);
  EXPECT_NE(text.find("for processes seen at least 2s"), std::string::npos) << text;
  EXPECT_NE(text.find("no slope (seen for less than 2s): pid 21\n"), std::string::npos) << text;
  const json j = json::parse(summary_json(s));
  EXPECT_EQ(j["min_seen_s"], 2.0);
  EXPECT_TRUE(j["processes"][1]["rss_slope"].is_null());
  EXPECT_EQ(j["processes"][1]["rss_slope_missing"], "seen for less than 2s");
  EXPECT_EQ(j["processes"][1]["mappings_slope_missing"], "seen for less than 2s");
  EXPECT_TRUE(j["processes"][0]["rss_slope_missing"].is_null());
}

// The minimum is the caller's: at 1s the 1.9 s process gets its slope (the control for the test above).
TEST(WatchSummary, MinimumSeenTimeIsAParameter) {
  History h;
  for (int i = 0; i <= 19; ++i) h.add(std::vector<ProcessSample>{row(i * 0.1, 21, 1000 + 100 * static_cast<std::uint64_t>(i), 40)});
  const auto sums = summarize(h, Warmup{}, 1.0);
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_TRUE(sums[0].rss_fit.valid);
  EXPECT_NEAR(sums[0].rss_fit.per_s, 1000.0, 1e-6);
}

// Seen long enough but sampled too rarely after the warm-up: the other reason, per slope.
TEST(WatchSummary, TooFewSamplesIsItsOwnReason) {
  History h;
  // Four samples over 3 s: after the 20 % warm-up only three remain.
  for (double t : {0.0, 1.0, 2.0, 3.0}) h.add(std::vector<ProcessSample>{row(t, 30, 1000 + static_cast<std::uint64_t>(t * 10), 40)});
  Summary s;
  s.processes = summarize(h, Warmup{});
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes[0].rss_fit.gap, FitGap::too_few_points);
  const std::string text = summary_text(s);
  EXPECT_NE(text.find("no slope (fewer than 5 samples after the warm-up): pid 30\n"), std::string::npos) << text;
}

// A pid reused by another process (other start time) is another process in the summary.
TEST(WatchSummary, PidReuseIsTwoProcesses) {
  History h;
  ProcessSample a = row(0, 7, 100, 10), b = row(1, 7, 900, 10);
  b.start_ticks = a.start_ticks + 50;
  h.add(std::vector<ProcessSample>{a});
  h.add(std::vector<ProcessSample>{b});
  EXPECT_EQ(h.processes().size(), 2u);
}

// The JSON summary carries the documented keys, and the text names each process.
TEST(WatchSummary, JsonAndText) {
  History h;
  for (int i = 0; i < 10; ++i) h.add(std::vector<ProcessSample>{row(i * 0.1, 10, 1000 + 100 * i, 40 + i)});
  Summary s;
  s.command = {"prog", "arg"};
  s.pids = {10};
  s.period_s = 0.1;
  s.run_s = 0.9;
  s.samples = h.samples();
  s.stop_reason = "command exited";
  s.exit_status = 0;
  s.exit_description = "exit 0";
  s.problems.push_back(ProblemNote{12, "other", "maps", "open /proc/12/maps: EACCES (13)"});
  // Seen for 0.9 s: the 2 s default would leave it without slopes, which this test is not about.
  s.min_seen_s = 0.5;
  s.processes = summarize(h, Warmup{}, s.min_seen_s);
  const json j = json::parse(summary_json(s));
  EXPECT_EQ(j["schema"], "extmem-watch-summary");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["exit_status"], 0);
  ASSERT_EQ(j["processes"].size(), 1u);
  const json& p = j["processes"][0];
  EXPECT_EQ(p["peak_vmhwm_kib"], 1900);
  EXPECT_EQ(p["peak_mappings"], 49);
  EXPECT_EQ(p["tenths"].size(), 11u);
  EXPECT_NEAR(p["rss_slope"]["kib_per_s"].get<double>(), 1000.0, 1e-6);
  EXPECT_NEAR(p["rss_slope"]["mib_per_10s"].get<double>(), 10000.0 / 1024, 1e-6);
  EXPECT_NEAR(p["mappings_slope"]["per_10s"].get<double>(), 100.0, 1e-6);
  EXPECT_EQ(j["problems"][0]["error"], "open /proc/12/maps: EACCES (13)");
  const std::string text = summary_text(s);
  EXPECT_NE(text.find("p10"), std::string::npos);
  EXPECT_NE(text.find("EACCES (13)"), std::string::npos);
  EXPECT_NE(text.find("exit 0"), std::string::npos);
}

// ---------------------------------------------------------------- series formats

std::vector<ProcessSample> two_rows() {
  ProcessSample a = row(0.25, 10, 1000, 42, {{"anon", 2}, {"memfd:a;b=c", 1}});
  a.comm = "we\tird,\"x\"";
  a.fds = 5;
  a.threads = 2;
  ProcessSample b = row(0.25, 11, 2000, std::nullopt);
  return {a, b};
}

// TSV: a header, then one line per row with every column; unknown is an empty field; tabs in comm become '?'.
TEST(WatchSeries, Tsv) {
  std::string out = series_header(SeriesFormat::tsv, {false, true});
  append_rows(out, SeriesFormat::tsv, {false, true}, two_rows());
  std::istringstream in(out);
  std::string header, l1, l2;
  std::getline(in, header);
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(header, "t\tpid\tppid\tcomm\trss_kib\thwm_kib\tanon_kib\tfile_kib\tshmem_kib\tswap_kib\tmappings\tfds\tthreads\tclasses");
  EXPECT_EQ(l1, "0.250\t10\t1\twe?ird,\"x\"\t1000\t1000\t\t\t\t\t42\t5\t2\tanon=2;memfd:a%3Bb%3Dc=1");
  EXPECT_EQ(l2, "0.250\t11\t1\tp11\t2000\t2000\t\t\t\t\t\t\t\t");
}

// CSV quotes a field with a comma or a quote, doubling the quote.
TEST(WatchSeries, Csv) {
  std::string out;
  append_rows(out, SeriesFormat::csv, {}, two_rows());
  EXPECT_EQ(out.substr(0, out.find('\n')), "0.250,10,1,\"we?ird,\"\"x\"\"\",1000,1000,,,,,42,5,2");
}

// JSONL: one object per line, null for unknown, classes as an object.
TEST(WatchSeries, Jsonl) {
  std::string out;
  append_rows(out, SeriesFormat::jsonl, {true, true}, two_rows());
  std::istringstream in(out);
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  const json a = json::parse(l1), b = json::parse(l2);
  EXPECT_EQ(a["comm"], "we\tird,\"x\"");
  EXPECT_EQ(a["mappings"], 42);
  EXPECT_EQ(a["classes"]["memfd:a;b=c"], 1);
  EXPECT_TRUE(a["pss_kib"].is_null());
  EXPECT_TRUE(b["mappings"].is_null());
  EXPECT_TRUE(b["classes"].is_null());
  EXPECT_EQ(series_header(SeriesFormat::jsonl, {}), "");
}

// Unknown formats are refused naming what is accepted.
TEST(WatchSeries, FormatNames) {
  EXPECT_EQ(*parse_series_format("csv"), SeriesFormat::csv);
  auto bad = parse_series_format("xml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().detail.find("tsv, csv or jsonl"), std::string::npos);
}

// ---------------------------------------------------------------- the SVG

// Runs python3's XML parser on an SVG and prints "polylines circles texts" (or the parse error).
std::string xml_check(const std::string& path) {
  const std::string cmd =
      "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); "
      "ns='{http://www.w3.org/2000/svg}'; "
      "print(r.tag == ns+'svg', len(r.findall('.//'+ns+'polyline')), len(r.findall('.//'+ns+'circle')), "
      "' | '.join(t.text or '' for t in r.findall('.//'+ns+'text')))\" " +
      path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  return out;
}

// The plot is well-formed XML (parsed by python3), with two lines per process and escaped names.
TEST(WatchPlot, ValidSvgWithTwoLinesPerProcess) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3 (scripts/deps.sh installs it)";
  History h;
  for (int i = 0; i < 50; ++i) {
    std::vector<ProcessSample> rows = {row(i * 0.1, 10, 1000 + 10 * i, 40 + i), row(i * 0.1, 11, 3000, 30)};
    rows[1].comm = "<&\"evil\x01'>";
    h.add(rows);
  }
  h.add(std::vector<ProcessSample>{row(5.0, 12, 500, 9)});  // seen once: a dot
  char path[] = "/tmp/extmem-watch-plot-XXXXXX.svg";
  int fd = mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  close(fd);
  PlotOptions po;
  po.title = "extmem watch -- a & b < c";
  ASSERT_TRUE(write_svg_plot(path, h, po));
  const std::string result = xml_check(path);
  EXPECT_EQ(result.substr(0, 9), "True 4 2 ") << result;  // 2 processes x 2 panels + 1 process as dots
  EXPECT_NE(result.find("11 <&\"evil?'>"), std::string::npos) << result;
  EXPECT_NE(result.find("a & b < c"), std::string::npos) << result;
  const std::string svg = slurp(path);
  EXPECT_LT(svg.size(), 40000u);  // small: 150 points and the axes
  unlink(path);
}

// A long series is thinned to a bounded number of points, keeping the extremes.
TEST(WatchPlot, LongSeriesIsThinned) {
  History h;
  for (int i = 0; i < 20000; ++i)
    h.add(std::vector<ProcessSample>{row(i * 0.01, 10, i == 12345 ? 900000 : 1000 + (i % 7), 40)});
  PlotOptions po;
  const std::string svg = svg_plot(h, po);
  EXPECT_LT(svg.size(), 150000u);
  // The spike survives thinning: the top panel's range reaches ~879 MiB, so a 800 tick is drawn.
  EXPECT_NE(svg.find(">800<"), std::string::npos);
}

// ---------------------------------------------------------------- the sampler

struct SleepChild {
  pid_t pid = -1;
  SleepChild() {
    char arg0[] = "sleep", arg1[] = "30";
    char* argv[] = {arg0, arg1, nullptr};
    posix_spawnp(&pid, "sleep", nullptr, nullptr, argv, environ);
    // posix_spawn returns once the exec is past its point of no return, before
    // the new image is mapped: wait (at most 2 s) until its libraries are in.
    for (int i = 0; i < 200 && pid > 0; ++i) {
      if (slurp("/proc/" + std::to_string(pid) + "/maps").find("libc") != std::string::npos) break;
      usleep(10000);
    }
  }
  ~SleepChild() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

bool has_pid(const std::vector<ProcessSample>& rows, pid_t pid) {
  return std::any_of(rows.begin(), rows.end(), [&](const ProcessSample& s) { return s.pid == pid; });
}

// The sampler finds this process and its child, with every figure filled.
TEST(WatchSampler, FindsSelfAndChild) {
  SleepChild child;
  ASSERT_GT(child.pid, 0);
  for (bool scan : {false, true}) {
    SamplerOptions o;
    o.scan_all_processes = scan;
    Sampler s({getpid()}, o);
    auto rows = s.sample(0);
    ASSERT_GE(rows.size(), 2u) << "scan=" << scan;
    EXPECT_EQ(rows[0].pid, getpid());
    EXPECT_TRUE(has_pid(rows, child.pid)) << "scan=" << scan;
    for (const ProcessSample& r : rows) {
      if (r.pid != child.pid && r.pid != getpid()) continue;
      EXPECT_TRUE(r.rss_kib && r.hwm_kib && r.anon_kib && r.file_kib && r.shmem_kib && r.swap_kib);
      EXPECT_TRUE(r.mappings && *r.mappings > 5);
      EXPECT_TRUE(r.fds && r.threads);
      EXPECT_FALSE(r.pss_kib.has_value());
    }
    EXPECT_TRUE(s.take_new_problems().empty());
  }
}

// With --classes and --pss the census and PSS come along, and the classes add up to the count.
TEST(WatchSampler, ClassesAndPss) {
  SamplerOptions o;
  o.classes = true;
  o.pss = true;
  Sampler s({getpid()}, o);
  auto rows = s.sample(0);
  ASSERT_FALSE(rows.empty());
  const ProcessSample& me = rows[0];
  ASSERT_TRUE(me.classes_taken);
  std::uint64_t sum = 0;
  for (const auto& [name, n] : me.classes) sum += n;
  EXPECT_EQ(sum, *me.mappings);
  ASSERT_TRUE(me.pss_kib.has_value());
  EXPECT_LE(*me.pss_kib, *me.rss_kib + 1024);
}

// A child that exits is gone from the next sample; its pid is not followed if reused.
TEST(WatchSampler, ExitedChildLeaves) {
  auto child = std::make_unique<SleepChild>();
  const pid_t pid = child->pid;
  Sampler s({getpid()}, {});
  EXPECT_TRUE(has_pid(s.sample(0), pid));
  child.reset();  // killed and reaped
  EXPECT_FALSE(has_pid(s.sample(0.1), pid));
}

// Budget control: with a budget of 100 % the map read happens every sample; with a
// near-zero budget the first read spends more than the bucket holds and the next
// samples leave the mapping count empty.
TEST(WatchSampler, BudgetSpreadsMapReads) {
  SamplerOptions every;
  every.budget = 1.0;
  Sampler a({getpid()}, every);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(a.sample(i * 0.1)[0].mappings.has_value());
  EXPECT_EQ(a.map_reads(), 5u);

  SamplerOptions stingy;
  stingy.budget = 1e-6;  // one microsecond of CPU per second
  Sampler b({getpid()}, stingy);
  EXPECT_TRUE(b.sample(0)[0].mappings.has_value());  // the first sample always reads
  for (int i = 1; i < 10; ++i) {
    auto rows = b.sample(i * 0.1);
    EXPECT_FALSE(rows[0].mappings.has_value()) << i;
    EXPECT_TRUE(rows[0].rss_kib.has_value()) << i;  // the cheap figures stay
  }
  EXPECT_EQ(b.map_reads(), 1u);
}

}  // namespace
