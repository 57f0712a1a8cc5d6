// The --output file: what `extmem probe` prints, written through as the run goes
// so that someone tailing the file sees each RESULT line when its row finishes.
#pragma once

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::probe {

/// Owns the open --output file and a stream over it. Text is buffered until the
/// stream is flushed (run() flushes after phase A and after every row), then
/// written with write(2). Not copyable or movable: the stream points into it.
class OutputFile {
 public:
  /// Creates or truncates `path` (mode 0644). Call only once every option is
  /// valid, so a refused run leaves no file behind. Errors: ErrorKind::os,
  /// step "--output", code the errno, detail "cannot write PATH: <strerror>".
  static Result<std::unique_ptr<OutputFile>> create(const std::string& path);

  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return stream_; }

  /// Flushes what is buffered and reports the first write that failed during
  /// the run (ENOSPC, EIO, ...), with the path, or success.
  Status finish();

 private:
  class Buffer : public std::streambuf {
   public:
    Buffer(os::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
    Status status() const { return error_.step.empty() ? Status{} : Status{error_}; }

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    os::UniqueFd fd_;
    std::string path_;
    std::string pending_;
    Error error_;  // empty step: no write failed
  };

  OutputFile(os::UniqueFd fd, const std::string& path) : buffer_(std::move(fd), path), stream_(&buffer_) {}

  Buffer buffer_;
  std::ostream stream_;
};

}  // namespace extmem::probe
