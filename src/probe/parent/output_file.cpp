#include "probe/parent/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace extmem::probe {

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& path) {
  os::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644));
  if (!fd.valid()) {
    const int err = errno;
    return os_error("--output", err, fmt::format("cannot write {}: {}", path, std::strerror(err)));
  }
  return std::unique_ptr<OutputFile>(new OutputFile(std::move(fd), path));
}

Status OutputFile::finish() {
  stream_.flush();
  return buffer_.status();
}

OutputFile::Buffer::int_type OutputFile::Buffer::overflow(int_type c) {
  if (!traits_type::eq_int_type(c, traits_type::eof())) pending_ += traits_type::to_char_type(c);
  return traits_type::not_eof(c);
}

std::streamsize OutputFile::Buffer::xsputn(const char* s, std::streamsize n) {
  pending_.append(s, static_cast<std::size_t>(n));
  return n;
}

int OutputFile::Buffer::sync() {
  std::size_t done = 0;
  // After a failed write the rest is dropped: the run goes on and finish() reports the first failure.
  while (error_.step.empty() && done < pending_.size()) {
    const ssize_t n = ::write(fd_.get(), pending_.data() + done, pending_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      error_ = os_error("--output", err, fmt::format("cannot write {}: {}", path_, std::strerror(err)));
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  pending_.clear();
  return 0;
}

}  // namespace extmem::probe
