// The `maps`, `va2pa`, `peek` and `poke` commands as library calls: each takes
// parsed options, prints to the given streams and returns an exit code, so the
// command-line files only parse options. docs/memtools.md shows the output.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/ram_map.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// Process exit codes of the memtools commands (docs/memtools.md, "Exit codes").
enum ExitCode : int {
  kExitOk = 0,              ///< done
  kExitFailed = 1,          ///< another failure: an I/O error (EIO), a read-back that differs,
                            ///< va2pa: page not present or its address outside --ram-map
  kExitUsage = 2,           ///< bad option or malformed input (the message marks the character)
  kExitRefused = 3,         ///< address outside every mapping, word crossing a mapping's end,
                            ///< mapping not matching --match or not writable; nothing written
  kExitExpectMismatch = 4,  ///< poke --expect: the old value differs; nothing written
  kExitNoProcess = 5,       ///< no such process, or it ended while we worked
  kExitPermission = 6,      ///< permission denied (EACCES/EPERM); va2pa: the PFN is hidden
  kExitPastEnd = 7,         ///< file mode: the word runs past the end of the file
};

/// The exit code for an error of the memtools library: our refusal codes
/// (word_access.h), ENOENT/ESRCH, EACCES/EPERM, else kExitFailed
/// (kExitUsage for an invalid_argument without a code).
int exit_code_for(const Error& error);

/// Prints why `--file=path` of `command` could not be opened (`e`, from
/// WordTarget::open_file) and what is accepted (`access`: "readable" or
/// "writable"); returns the exit code of the exit-code table (docs/memtools.md):
/// kExitUsage for an empty path, kExitNoProcess when the file does not exist
/// (ENOENT), kExitPermission when it may not be opened (EACCES/EPERM), else
/// kExitUsage (a directory, a FIFO, ...).
int file_option_error(std::ostream& err, std::string_view command, std::string_view access, std::string_view path,
                      const Error& e);

/// Prints why the --audit log of `command` could not be opened (`e`) and what
/// is accepted; returns kExitUsage (a missing directory, a directory given as the file).
int audit_usage_error(std::ostream& err, std::string_view command, const Error& e);

/// Prints "extmem COMMAND: " and `error` rendered with its caret (naming
/// `option`) to `err`; returns kExitUsage.
int print_syntax_error(std::ostream& err, std::string_view command, std::string_view option,
                       const SyntaxError& error);

/// `extmem maps`.
struct MapsOptions {
  pid_t pid = 0;
  std::optional<MapSpec> match;  ///< only mappings matching this
  bool pagemap = false;          ///< add the folded pagemap entries of each mapping
  bool json = false;             ///< one JSON document instead of text
};
/// Lists the mappings of `options.pid`. Returns an ExitCode; errors go to `err`.
int run_maps(const MapsOptions& options, std::ostream& out, std::ostream& err);

/// `extmem va2pa`.
struct Va2paOptions {
  pid_t pid = 0;
  std::vector<std::uint64_t> addresses;  ///< virtual addresses
  std::optional<RamMap> ram_map;         ///< translate physical addresses to file offsets too
};
/// One line per address: mapping, flags, PFN, physical address, file offset.
/// Returns kExitOk when every address translated fully, else the code of the
/// first that did not (kExitRefused: not mapped; kExitPermission: PFN hidden;
/// kExitFailed: not present or outside the ram-map).
int run_va2pa(const Va2paOptions& options, std::ostream& out, std::ostream& err);

/// `extmem peek` / `extmem poke`: a process (pid) or a file.
struct WordOptions {
  pid_t pid = 0;                        ///< process mode when file is empty
  std::string file;                     ///< file mode
  unsigned width = 4;                   ///< 1, 2, 4 or 8
  std::optional<MapSpec> match;         ///< process mode: the mapping must match
  std::optional<RamMap> ram_map;        ///< file mode: addresses are guest-physical, translated to file offsets
};

/// File offset of the word at `address` in file mode: `address` itself, or its
/// translation through `options.ram_map`. Errors (invalid_argument):
/// kCodeNotMapped outside every range, kCodeCrossesMapping when the word's
/// bytes do not lie in one range.
Result<std::uint64_t> file_offset_of(const WordOptions& options, std::uint64_t address);

/// Reads and prints each address (or file offset). Returns the code of the first failure.
int run_peek(const WordOptions& options, const std::vector<std::uint64_t>& addresses, std::ostream& out,
             std::ostream& err);

/// Writes one word (see poke_process / poke_file), prints "old -> new" on
/// `out`, appends the audit line to `audit_path` ("" = standard error).
int run_poke(const WordOptions& options, std::uint64_t address, std::uint64_t value,
             std::optional<std::uint64_t> expect, const std::string& audit_path, std::ostream& out,
             std::ostream& err);

}  // namespace extmem::memtools
