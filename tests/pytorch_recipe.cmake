# The PyTorch recipe (docs/recipes/pytorch.md): examples/pytorch_alias.py run against this build's
# libextmem.so.0 with CPU tensors in shared memory, a real torch.multiprocessing child. Debian's
# python3-torch (scripts/deps.sh) lives in /usr/bin/python3's dist-packages, so that interpreter is
# preferred to one earlier in PATH. Without torch the script exits 3: the tests SKIP with its reason.
find_program(EXTMEM_PYTHON3 NAMES python3 HINTS /usr/bin DOC "Python with torch, for the pytorch.* tests")
set(EXTMEM_PYTORCH_SCRIPT ${CMAKE_SOURCE_DIR}/examples/pytorch_alias.py)
set(EXTMEM_PYTORCH_ARGS --lib=$<TARGET_FILE:extmem_c> --device=cpu --size=262144)

# A Python interpreter is not instrumented: loading a sanitizer-instrumented libextmem.so into it
# needs the sanitizer's runtime loaded first (LD_PRELOAD), as an instrumented executable would have
# it linked in. clang's shared ASan runtime carries UBSan's handlers too; gcc's does not. Leak
# checking is off: it would report the interpreter's and torch's deliberate leaks at exit, not ours.
set(EXTMEM_PYTORCH_ENV "")
set(extmem_flags "${CMAKE_CXX_FLAGS}")
if(EXTMEM_BUILD_FUZZ)
  string(APPEND extmem_flags " -fsanitize=address,undefined")
endif()
set(extmem_runtimes "")
if(extmem_flags MATCHES "-fsanitize=[^ ]*address")
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND extmem_runtimes libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
  else()
    list(APPEND extmem_runtimes libasan.so)
    if(extmem_flags MATCHES "-fsanitize=[^ ]*undefined")
      list(APPEND extmem_runtimes libubsan.so)
    endif()
  endif()
  list(APPEND EXTMEM_PYTORCH_ENV "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0:handle_abort=0:allocator_may_return_null=1")
elseif(extmem_flags MATCHES "-fsanitize=[^ ]*thread")
  list(APPEND extmem_runtimes libtsan.so)
endif()
set(extmem_preload "")
foreach(runtime ${extmem_runtimes})
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${runtime} OUTPUT_VARIABLE path
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${path}" OR NOT EXISTS "${path}")
    message(WARNING "extmem: ${runtime} not found by ${CMAKE_CXX_COMPILER}; the pytorch.* tests will fail to load libextmem")
  endif()
  list(APPEND extmem_preload "${path}")
endforeach()
if(extmem_preload)
  list(JOIN extmem_preload ":" extmem_preload)
  list(APPEND EXTMEM_PYTORCH_ENV "LD_PRELOAD=${extmem_preload}")
endif()

add_test(NAME pytorch.cpu_alias COMMAND ${EXTMEM_PYTHON3} ${EXTMEM_PYTORCH_SCRIPT} ${EXTMEM_PYTORCH_ARGS} --case=alias)
add_test(NAME pytorch.cpu_copy COMMAND ${EXTMEM_PYTHON3} ${EXTMEM_PYTORCH_SCRIPT} ${EXTMEM_PYTORCH_ARGS} --case=copy)
# The harness can fail: a child that answers from a private clone makes the alias case a copy,
# which the script must report as a wrong verdict (exit 5), not pass.
add_test(NAME pytorch.cpu_wrong_verdict_fails
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/expect_exit.sh 5 3
          ${EXTMEM_PYTHON3} ${EXTMEM_PYTORCH_SCRIPT} ${EXTMEM_PYTORCH_ARGS} --case=alias --child-snapshots)
# Bad arguments: exit 2 with the accepted range (before torch is imported), ValueError from check_rw.
add_test(NAME pytorch.bad_input
  COMMAND ${EXTMEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/pytorch_bad_input.py ${EXTMEM_PYTORCH_SCRIPT}
          $<TARGET_FILE:extmem_c>)
set(extmem_pytorch_tests pytorch.cpu_alias pytorch.cpu_copy pytorch.cpu_wrong_verdict_fails pytorch.bad_input)
set_tests_properties(${extmem_pytorch_tests} PROPERTIES SKIP_RETURN_CODE 3 TIMEOUT 120 LABELS pytorch)
# Belt and braces beside the exit status: a verdict printed as wrong fails the test whatever the exit.
set_tests_properties(pytorch.cpu_alias pytorch.cpu_copy PROPERTIES FAIL_REGULAR_EXPRESSION "-> WRONG")
if(EXTMEM_PYTORCH_ENV)
  set_tests_properties(${extmem_pytorch_tests} PROPERTIES ENVIRONMENT "${EXTMEM_PYTORCH_ENV}")
endif()
