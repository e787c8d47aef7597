# bench_jm: JM placement rate on a synthetic 20,000-node view, the time to match a 1,000-task batch
# (targets: docs/architecture.md, "Targets"), and the JM's CPU time per placed task at 2,000, 20,000
# and 200,000 ready tasks (issue 16). A benchmark that prints figures, not a ctest test.
add_executable(bench_jm ${CMAKE_CURRENT_SOURCE_DIR}/bench_jm.c)
target_link_libraries(bench_jm PRIVATE paddock_jm paddock_common ${MATH_LIB})
