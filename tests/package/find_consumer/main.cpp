// A program built from an installed extmem (find_package) that runs the probe as
// a library call: find() on the default device (lavapipe in CI) for one row,
// its halves in processes of the installed extmem executable. Then find() with
// a worker that is not there: a typed error, and nothing started. Exit 0 when
// every answer is right, 1 otherwise (the reason on stderr).
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include <extmem/probe/findings.h>
#include <extmem/probe/probe.h>
#include <extmem/version.h>

namespace probe = extmem::probe;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "find_consumer: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  probe::ProbeOptions o;
  o.worker = EXTMEM_WORKER;
  o.only = {"T3-memfd-cross-process"};
  auto found = probe::find(o);
  if (!found) return fail("find(): " + found.error().message());
  const probe::RowResult* row = nullptr;
  for (const probe::RowResult& r : found->rows)
    if (r.row == "T3-memfd-cross-process") row = &r;
  if (row == nullptr) return fail("no T3-memfd-cross-process row");
  if (row->verdict.status != extmem::RowStatus::ok)
    return fail("T3-memfd-cross-process is " + std::string(extmem::to_string(row->verdict.status)) + ": " + row->verdict.why);

  // A worker that is not there: the typed error, before anything starts.
  o.worker = "/nonexistent-extmem-prefix/bin/extmem";
  auto missing = probe::find(o);
  if (missing) return fail("find() ran without its worker executable");
  const extmem::Error& e = missing.error();
  if (e.kind != extmem::ErrorKind::os || !e.is_errno(ENOENT) || e.step != "find the worker executable")
    return fail("find() without a worker: " + e.message());
  errno = 0;
  if (::waitpid(-1, nullptr, WNOHANG) != -1 || errno != ECHILD) return fail("a child is left");
  std::printf("find_consumer: extmem %s, T3-memfd-cross-process OK through %s; a missing worker: %s\n", extmem::kVersion,
              EXTMEM_WORKER, e.message().c_str());
  return 0;
}
