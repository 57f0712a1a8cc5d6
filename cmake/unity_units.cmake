# The library's unity units (EXTMEM_UNITY): its .cpp files shared out among
# EXTMEM_UNITY_UNITS units of about equal size, so the build's two cores finish
# them together. Each file, largest first (bytes of source, the cost's proxy),
# goes to the unit with the fewest bytes so far.
#
# extmem_unity_units(TARGET FIRST_FILES LATER_FILES): FIRST_FILES are shared out
# before LATER_FILES, so a file of FIRST_FILES lands in the same unit whether
# LATER_FILES is empty or not. The library calls it with the files the probe
# alone builds (preset "probe") first and the other components' files after:
# every unit of the probe's build is then part of a unit of the full build
# (preset "fuzz", CI), and a name two files of a probe unit define fails CI too.
# Files marked SKIP_UNITY_BUILD_INCLUSION stay units of their own.
function(extmem_unity_units target first later)
  if(NOT EXTMEM_UNITY_UNITS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "EXTMEM_UNITY_UNITS is '${EXTMEM_UNITY_UNITS}': a number of units, 1 or more")
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  math(EXPR last "${EXTMEM_UNITY_UNITS} - 1")
  foreach(i RANGE ${last})
    set(load_${i} 0)
  endforeach()
  foreach(files IN ITEMS first later)
    # Sizes zero-padded to ten digits, so that sorting the text sorts the numbers.
    set(sized "")
    foreach(f IN LISTS ${${files}})
      get_source_file_property(skip ${f} SKIP_UNITY_BUILD_INCLUSION)
      if(NOT f MATCHES "\\.cpp$" OR skip)
        continue()
      endif()
      if(EXISTS ${f})
        file(SIZE ${f} bytes)
      else()
        set(bytes 0)  # generated at build time: small (the route table)
      endif()
      string(LENGTH "${bytes}" digits)
      math(EXPR pad "10 - ${digits}")
      string(REPEAT "0" ${pad} zeros)
      list(APPEND sized "${zeros}${bytes}|${f}")
    endforeach()
    list(SORT sized ORDER DESCENDING)
    foreach(entry IN LISTS sized)
      string(REGEX REPLACE "^0*([0-9]+)\\|.*" "\\1" bytes "${entry}")
      string(REGEX REPLACE "^[0-9]+\\|" "" f "${entry}")
      set(best 0)
      foreach(i RANGE ${last})
        if(load_${i} LESS load_${best})
          set(best ${i})
        endif()
      endforeach()
      math(EXPR load_${best} "${load_${best}} + ${bytes}")
      set_source_files_properties(${f} PROPERTIES UNITY_GROUP ${best})
    endforeach()
  endforeach()
endfunction()
