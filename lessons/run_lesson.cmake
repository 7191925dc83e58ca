# Runs one lesson program for CTest:  cmake -DPROGRAM=path -DTABLE_HEADER=regex -P run_lesson.cmake
# Passes when the program exits 0, prints its table (a line matching TABLE_HEADER, then at least
# one PASS row) and no row says FAIL. Its output is shown either way.
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE status OUTPUT_VARIABLE output
                ERROR_VARIABLE output)
message("${output}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with status ${status}")
endif()
if(NOT output MATCHES "${TABLE_HEADER}[^\n]*\n(.*\n)?[^\n]* PASS ")
  message(FATAL_ERROR "${PROGRAM} did not print its table (header '${TABLE_HEADER}', PASS rows)")
endif()
if(output MATCHES "FAIL")
  message(FATAL_ERROR "${PROGRAM}: a variant does not match the reference")
endif()
