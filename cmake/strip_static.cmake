# CPack pre-build script: CPACK_STRIP_FILES strips executables and shared
# libraries but not libextmem.a, whose debug info is most of its size (about
# 170 MB of a RelWithDebInfo build); strip that in the staging tree too.
file(GLOB_RECURSE extmem_static_libs "${CPACK_TEMPORARY_DIRECTORY}/*.a")
foreach(lib ${extmem_static_libs})
  execute_process(COMMAND strip --strip-debug "${lib}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug ${lib} failed (${rc})")
  endif()
endforeach()
