# bench-proto: encode/decode rates of the wire protocol (a benchmark, not a ctest test).
add_executable(bench-proto ${CMAKE_CURRENT_LIST_DIR}/bench_proto.c)
target_link_libraries(bench-proto PRIVATE paddock_proto)
