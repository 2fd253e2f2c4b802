# simmer_pytest(PREFIX FILE [TIMEOUT s] [SKIP] [ENVIRONMENT var=value ...])
#
# Registers every test of a pytest file (tests/conftest.py) as one CTest test: the file is the one
# list of its cases. The tests are collected at configure time (`pytest --collect-only`), and the
# file is a configure dependency, so a new test function or parameter is picked up by the next
# build. Names: "<PREFIX>: <function without test_>", or "<PREFIX>: <parameter id>" for a
# parametrised function; two tests of one file with the same name are refused here.
# Each test runs `python3 -m pytest FILE::ID` with SIMMER_MPI, SIMMER_ANALYZE and SIMMER_ROOT set
# (and OpenMPI allowed as root); SKIP: exit 77 (every selected test skipped) counts as skipped.
# A test marked `@pytest.mark.serial("why")` in its file (tests/pytest.ini) is RUN_SERIAL: CTest
# runs it alone. The others run two at a time (tests/run.sh), beside whatever else is running.
function(simmer_pytest prefix file)
  cmake_parse_arguments(ARG "SKIP" "TIMEOUT" "ENVIRONMENT" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  execute_process(
    COMMAND ${SIMMER_SYSTEM_PYTHON} -m pytest --collect-only -q -p no:cacheprovider "${file}"
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    OUTPUT_VARIABLE collected ERROR_VARIABLE collect_errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "simmer_pytest: collecting ${file} failed (exit ${rc}): is python3-pytest installed "
                        "(cmake/install-deps.sh)?\n${collected}\n${collect_errors}")
  endif()
  # A collected node id: FILE::test_function or FILE::test_function[parameter id].
  set(node_pattern "::(test_[A-Za-z0-9_]+)(\\[(.+)\\])?$")
  # The serial tests: a second collection, only for a file that marks any.
  set(serial_ids "")
  file(READ "${file}" source)
  if(source MATCHES "pytest\\.mark\\.serial")
    execute_process(
      COMMAND ${SIMMER_SYSTEM_PYTHON} -m pytest --collect-only -q -p no:cacheprovider -m serial "${file}"
      WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
      OUTPUT_VARIABLE serial_collected ERROR_VARIABLE collect_errors RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 AND NOT rc EQUAL 5)  # 5: none collected (the word in a comment)
      message(FATAL_ERROR "simmer_pytest: collecting the serial tests of ${file} failed (exit ${rc}):\n"
                          "${serial_collected}\n${collect_errors}")
    endif()
    string(REPLACE "\n" ";" serial_lines "${serial_collected}")
    foreach(line IN LISTS serial_lines)
      if(line MATCHES "${node_pattern}")
        list(APPEND serial_ids "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      endif()
    endforeach()
  endif()
  string(REPLACE "\n" ";" lines "${collected}")
  set(names "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "${node_pattern}")
      continue()
    endif()
    set(function "${CMAKE_MATCH_1}")
    set(param "${CMAKE_MATCH_3}")
    if(param STREQUAL "")
      string(REGEX REPLACE "^test_" "" name "${function}")
      set(id "${function}")
    else()
      set(name "${param}")
      set(id "${function}[${param}]")
    endif()
    if(name IN_LIST names)
      message(FATAL_ERROR "simmer_pytest: ${file} has two tests named '${name}'")
    endif()
    list(APPEND names "${name}")
    set(test "${prefix}: ${name}")
    add_test(NAME "${test}"
             COMMAND ${SIMMER_SYSTEM_PYTHON} -m pytest -q -p no:cacheprovider -x "${file}::${id}"
             WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
    set(env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
            "SIMMER_MPI=$<TARGET_FILE:simmer_mpi>;SIMMER_ANALYZE=$<TARGET_FILE:simmer_analyze>"
            "SIMMER_ROOT=${PROJECT_SOURCE_DIR};SIMMER_TEST_SANITIZED=$<BOOL:${SIMMER_SANITIZE}>"
            ${ARG_ENVIRONMENT})
    set_tests_properties("${test}" PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${env}")
    if(id IN_LIST serial_ids)
      set_tests_properties("${test}" PROPERTIES RUN_SERIAL TRUE)
    endif()
    if(ARG_SKIP)
      set_tests_properties("${test}" PROPERTIES SKIP_RETURN_CODE 77)
    endif()
  endforeach()
  if(names STREQUAL "")
    message(FATAL_ERROR "simmer_pytest: ${file} has no tests")
  endif()
endfunction()
