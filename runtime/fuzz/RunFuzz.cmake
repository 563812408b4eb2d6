# Runs the runtime fuzzer for SECONDS on CORPUS (seeded from every file in
# SEEDS); fails when libFuzzer reports a crash, timeout or sanitizer error.
file(MAKE_DIRECTORY ${CORPUS} ${ARTIFACTS})
file(GLOB seedfiles ${SEEDS}/*)
foreach(f ${seedfiles})
  get_filename_component(name ${f} NAME)
  file(COPY_FILE ${f} ${CORPUS}/seed-${name} ONLY_IF_DIFFERENT)
endforeach()
execute_process(
  COMMAND ${FUZZER} ${CORPUS} -max_total_time=${SECONDS} -max_len=8192
          -timeout=20 -dict=${DICT} -rss_limit_mb=4096 -print_final_stats=1
          -artifact_prefix=${ARTIFACTS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tg-fuzz-runtime found a problem (exit ${rc}); see ${ARTIFACTS}")
endif()
