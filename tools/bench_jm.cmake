# bench_jm: JM placement rate on a synthetic 20,000-node view and the time to match a
# 1,000-task batch (DESIGN.md 5). A benchmark that prints figures, not a ctest test.
add_executable(bench_jm ${CMAKE_CURRENT_SOURCE_DIR}/bench_jm.c)
target_link_libraries(bench_jm PRIVATE paddock_jm paddock_common ${MATH_LIB})
