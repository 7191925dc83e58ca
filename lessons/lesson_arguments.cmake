# The command line every lesson program shares (seed_from_args in lesson.hpp), on one of them:
#   cmake -DPROGRAM=path [-DFLAVOR=sim] -P lesson_arguments.cmake
# --help prints the usage and exits 0; a seed outside 0 .. 2^64 - 1, or a second argument, is one
# error line naming it and exit status 1. The largest seed replays. In a sim build a simulator
# setting the program does not take is one error line naming the variable, before anything runs
# (it used to end the program from inside a launch, or fail every GPU row as a wrong result).

# Runs PROGRAM with the arguments (after `ENV NAME=VALUE...`, with that environment); fails
# unless it exits with `status` and prints `pattern`.
function(expect status pattern)
  set(arguments ${ARGN})
  set(environment)
  if(arguments MATCHES "^ENV;")
    list(POP_FRONT arguments)
    list(POP_FRONT arguments variable)
    set(environment ${CMAKE_COMMAND} -E env ${variable})
  endif()
  execute_process(COMMAND ${environment} ${PROGRAM} ${arguments} RESULT_VARIABLE got
                  OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT got EQUAL status)
    message(FATAL_ERROR "${PROGRAM} ${ARGN}: exit status ${got}, expected ${status}\n${output}")
  endif()
  if(NOT output MATCHES "${pattern}")
    message(FATAL_ERROR "${PROGRAM} ${ARGN}: no '${pattern}' in its output\n${output}")
  endif()
endfunction()

expect(0 "usage: .* \\[SEED\\]" --help)
expect(1 "the only argument is the inputs' seed; got 2 arguments" 1 2)
expect(1 "takes an integer from 0 to 18446744073709551615, got '-1'" -1)
expect(1 "got '18446744073709551616'" 18446744073709551616)
expect(0 "seed 18446744073709551615 " 18446744073709551615)

if(FLAVOR STREQUAL "sim")
  expect(1 "TRIPTYCH_SIM_STACK_KB=abc: each CUDA thread's stack takes a whole number" ENV
         TRIPTYCH_SIM_STACK_KB=abc 1)
  expect(1 "TRIPTYCH_SIM_ORDER=bogus: simulator thread order 'bogus'" ENV TRIPTYCH_SIM_ORDER=bogus 1)
  expect(1 "TRIPTYCH_SIM_PROFILE=yes: takes 1 \\(on\\) or 0 \\(off\\)" ENV
         TRIPTYCH_SIM_PROFILE=yes 1)
endif()
