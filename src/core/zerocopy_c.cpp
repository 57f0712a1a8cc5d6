#include "extmem/core/zerocopy_c.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <string_view>

#include "extmem/core/zerocopy.h"

namespace zc = extmem::zerocopy;

static_assert(EXTMEM_ZC_MAX_RANDOM_OFFSETS == zc::kMaxRandomOffsets);
static_assert(EXTMEM_ZC_MAX_BOUNDARY_PAGES == zc::kMaxBoundaryPages);

namespace {

void set_message(extmem_zc_result* result, std::string_view text) noexcept {
  const std::size_t n = std::min(text.size(), sizeof(result->message) - 1);
  std::memcpy(result->message, text.data(), n);
  result->message[n] = '\0';
}

extmem_zc_status finish(extmem_zc_result* result, extmem_zc_status status, std::string_view message) noexcept {
  if (result != nullptr) {
    result->status = status;
    set_message(result, message);
  }
  return status;
}

zc::Options to_options(const extmem_zc_options* options) noexcept {
  zc::Options out;
  if (options != nullptr) {
    out.seed = options->seed;
    out.random_offsets = options->random_offsets;
    out.boundary_pages = options->boundary_pages;
  }
  return out;
}

extmem_zc_status to_status(zc::Errc errc) noexcept {
  switch (errc) {
    case zc::Errc::empty_producer: return EXTMEM_ZC_EMPTY_PRODUCER;
    case zc::Errc::consumer_too_short: return EXTMEM_ZC_CONSUMER_TOO_SHORT;
    case zc::Errc::short_read: return EXTMEM_ZC_SHORT_READ;
    case zc::Errc::read_failed: return EXTMEM_ZC_READ_FAILED;
    case zc::Errc::not_observed: return EXTMEM_ZC_NOT_OBSERVED;
    case zc::Errc::write_failed: return EXTMEM_ZC_WRITE_FAILED;
    case zc::Errc::invalid_options: return EXTMEM_ZC_INVALID_ARGUMENT;
  }
  return EXTMEM_ZC_INTERNAL_ERROR;
}

// Copies an Outcome into the C result; read_errno is filled by the caller.
extmem_zc_status report(const zc::Outcome& outcome, extmem_zc_result* result) noexcept {
  if (const zc::Failure* f = zc::failure(outcome)) {
    if (result != nullptr) {
      result->offset = f->offset;
      result->written = f->written;
      result->seen = f->seen;
      result->original = f->original;
      result->sentinel = f->sentinel;
      result->restore_missed = f->restore_missed ? 1 : 0;
    }
    return finish(result, to_status(f->errc), f->message);
  }
  if (result != nullptr) result->offsets_probed = std::get<zc::Pass>(outcome).offsets_probed;
  return finish(result, EXTMEM_ZC_PASS, "");
}

void clear(extmem_zc_result* result) noexcept {
  if (result != nullptr) *result = extmem_zc_result{};
}

int clamp_errno(std::int64_t negative) noexcept {
  return negative < -static_cast<std::int64_t>(INT_MAX) ? INT_MAX : static_cast<int>(-negative);
}

// A C read function as a zerocopy::ReadFn; the last errno it returned goes to *last_errno.
zc::ReadFn read_bridge(extmem_zc_read_fn read, void* user, int* last_errno) {
  return [read, user, last_errno](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    const std::int64_t got = read(user, offset, out.data(), out.size());
    if (got < 0) {
      *last_errno = clamp_errno(got);
      return extmem::os_error("zerocopy read function", *last_errno);
    }
    return static_cast<std::size_t>(got);
  };
}

int to_side(zc::Side side) noexcept {
  switch (side) {
    case zc::Side::none: return EXTMEM_ZC_SIDE_NONE;
    case zc::Side::consumer: return EXTMEM_ZC_SIDE_CONSUMER;
    case zc::Side::producer: return EXTMEM_ZC_SIDE_PRODUCER;
  }
  return EXTMEM_ZC_SIDE_NONE;
}

}  // namespace

extern "C" {

const char* extmem_zc_status_name(extmem_zc_status status) {
  // A C caller may pass any int here; reading it as the C++ enum would be undefined
  // for values outside its range (UBSan's -fsanitize=enum), so read the int's bytes.
  int value = 0;
  static_assert(sizeof value == sizeof status);
  std::memcpy(&value, &status, sizeof value);
  switch (value) {
    case EXTMEM_ZC_PASS: return "pass";
    case EXTMEM_ZC_EMPTY_PRODUCER: return zc::to_string(zc::Errc::empty_producer);
    case EXTMEM_ZC_CONSUMER_TOO_SHORT: return zc::to_string(zc::Errc::consumer_too_short);
    case EXTMEM_ZC_SHORT_READ: return zc::to_string(zc::Errc::short_read);
    case EXTMEM_ZC_READ_FAILED: return zc::to_string(zc::Errc::read_failed);
    case EXTMEM_ZC_NOT_OBSERVED: return zc::to_string(zc::Errc::not_observed);
    case EXTMEM_ZC_WRITE_FAILED: return zc::to_string(zc::Errc::write_failed);
    case EXTMEM_ZC_INVALID_ARGUMENT: return "invalid_argument";
    case EXTMEM_ZC_INTERNAL_ERROR: return "internal_error";
  }
  return "unknown";
}

void extmem_zc_options_init(extmem_zc_options* options) {
  if (options == nullptr) return;
  const zc::Options defaults;
  options->seed = defaults.seed;
  options->random_offsets = defaults.random_offsets;
  options->boundary_pages = defaults.boundary_pages;
}

extmem_zc_status extmem_zc_check(void* producer, size_t producer_len, const void* consumer, size_t consumer_len,
                                 const extmem_zc_options* options, extmem_zc_result* result) {
  clear(result);
  if ((producer == nullptr && producer_len != 0) || (consumer == nullptr && consumer_len != 0)) {
    return finish(result, EXTMEM_ZC_INVALID_ARGUMENT, "extmem_zc_check: a NULL view with a non-zero length");
  }
  try {
    const zc::Outcome outcome =
        zc::check({static_cast<std::byte*>(producer), producer_len},
                  {static_cast<const std::byte*>(consumer), consumer_len}, to_options(options));
    return report(outcome, result);
  } catch (const std::exception& e) {
    return finish(result, EXTMEM_ZC_INTERNAL_ERROR, e.what());
  } catch (...) {
    return finish(result, EXTMEM_ZC_INTERNAL_ERROR, "unexpected exception");
  }
}

extmem_zc_status extmem_zc_check_fn(void* producer, size_t producer_len, extmem_zc_read_fn read, void* user,
                                    const extmem_zc_options* options, extmem_zc_result* result) {
  clear(result);
  if ((producer == nullptr && producer_len != 0) || read == nullptr) {
    return finish(result, EXTMEM_ZC_INVALID_ARGUMENT,
                  "extmem_zc_check_fn: a NULL producer with a non-zero length, or a NULL read function");
  }
  try {
    int last_errno = 0;
    const zc::ReadFn bridge = read_bridge(read, user, &last_errno);
    const zc::Outcome outcome =
        zc::check_fn({static_cast<std::byte*>(producer), producer_len}, bridge, to_options(options));
    const extmem_zc_status status = report(outcome, result);
    if (result != nullptr && status == EXTMEM_ZC_READ_FAILED) result->read_errno = last_errno;
    return status;
  } catch (const std::exception& e) {
    return finish(result, EXTMEM_ZC_INTERNAL_ERROR, e.what());
  } catch (...) {
    return finish(result, EXTMEM_ZC_INTERNAL_ERROR, "unexpected exception");
  }
}

extmem_zc_status extmem_zc_check_rw(size_t len, uint64_t producer_address, extmem_zc_read_fn producer_read,
                                    extmem_zc_write_fn producer_write, extmem_zc_read_fn consumer_read, void* user,
                                    const extmem_zc_options* options, extmem_zc_rw_result* result) {
  extmem_zc_result* base = result != nullptr ? &result->base : nullptr;
  if (result != nullptr) *result = extmem_zc_rw_result{};
  if (producer_read == nullptr || producer_write == nullptr || consumer_read == nullptr) {
    return finish(base, EXTMEM_ZC_INVALID_ARGUMENT, "extmem_zc_check_rw: a NULL read or write function");
  }
  try {
    // The two read functions report errno separately so the one that failed is the one reported.
    int producer_errno = 0;
    int consumer_errno = 0;
    int write_errno = 0;
    zc::ProducerFns producer;
    producer.address = static_cast<std::uintptr_t>(producer_address);
    producer.read = read_bridge(producer_read, user, &producer_errno);
    producer.write = [producer_write, user, &write_errno](std::size_t offset,
                                                          std::span<const std::byte> in) -> extmem::Status {
      const int rc = producer_write(user, offset, in.data(), in.size());
      if (rc < 0) {
        write_errno = clamp_errno(rc);
        return extmem::os_error("zerocopy write function", write_errno);
      }
      return {};
    };
    const zc::Outcome outcome =
        zc::check_rw(len, producer, read_bridge(consumer_read, user, &consumer_errno), to_options(options));
    const extmem_zc_status status = report(outcome, base);
    if (result != nullptr) {
      if (const zc::Failure* f = zc::failure(outcome)) {
        result->failed_side = to_side(f->side);
        result->restore_failed = f->restore_failed ? 1 : 0;
        if (status == EXTMEM_ZC_READ_FAILED) {
          result->base.read_errno = f->side == zc::Side::producer ? producer_errno : consumer_errno;
        }
        // A failed restore after a read failure still names the write's errno.
        if (status == EXTMEM_ZC_WRITE_FAILED || f->restore_failed) result->write_errno = write_errno;
      }
    }
    return status;
  } catch (const std::exception& e) {
    return finish(base, EXTMEM_ZC_INTERNAL_ERROR, e.what());
  } catch (...) {
    return finish(base, EXTMEM_ZC_INTERNAL_ERROR, "unexpected exception");
  }
}

}  // extern "C"
