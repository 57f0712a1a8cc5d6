# The system-call number -> name table of `extmem threads`, generated from the
# C library's <sys/syscall.h> for the architecture being built (the numbers a
# thread's /proc/PID/task/TID/syscall shows), so no table is written by hand.
# Output: ${EXTMEM_GENERATED_DIR}/memtools/syscall_names.inc, lines `{NR, "name"},`.
set(_syscall_probe ${CMAKE_CURRENT_BINARY_DIR}/syscall_probe.c)
file(WRITE ${_syscall_probe} "#include <sys/syscall.h>\n")
execute_process(COMMAND ${CMAKE_C_COMPILER} -dM -E ${_syscall_probe}
  OUTPUT_VARIABLE _syscall_macros RESULT_VARIABLE _syscall_rc ERROR_QUIET)
set(_syscall_lines "")
set(_syscall_count 0)
if(_syscall_rc EQUAL 0)
  string(REGEX MATCHALL "#define __NR_[a-z0-9_]+ [0-9]+" _syscall_defs "${_syscall_macros}")
  foreach(def ${_syscall_defs})
    string(REGEX REPLACE "#define __NR_([a-z0-9_]+) ([0-9]+)" "{\\2, \"\\1\"}," line "${def}")
    string(APPEND _syscall_lines "${line}\n")
    math(EXPR _syscall_count "${_syscall_count} + 1")
  endforeach()
endif()
if(_syscall_count EQUAL 0)
  message(WARNING "extmem: no __NR_ macros in <sys/syscall.h>: threads shows syscall numbers without names")
endif()
file(MAKE_DIRECTORY ${EXTMEM_GENERATED_DIR}/memtools)
# Written only when different, so a reconfigure does not rebuild the table.
file(CONFIGURE OUTPUT ${EXTMEM_GENERATED_DIR}/memtools/syscall_names.inc CONTENT "${_syscall_lines}")
message(STATUS "extmem: ${_syscall_count} system-call names from <sys/syscall.h>")
