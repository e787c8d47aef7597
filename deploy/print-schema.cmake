# cmake -DEXE=daemon -DOUT=file -P print-schema.cmake: writes `daemon --print-schema` to file.
execute_process(COMMAND ${EXE} --print-schema OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --print-schema failed: ${rc}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
