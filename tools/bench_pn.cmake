# bench_pn: the PN's throughput for `true` tasks beside the machine's posix_spawn floor (and a
# serial fork+exec loop), and the PN's idle RSS (targets: docs/architecture.md, "Targets"). A
# benchmark: prints figures, not part of ctest.
add_executable(bench_pn ${CMAKE_CURRENT_LIST_DIR}/bench_pn.c
                        ${CMAKE_CURRENT_LIST_DIR}/bench_spawnfloor.c)
target_link_libraries(bench_pn PRIVATE paddock_proto paddock_common PkgConfig::CZMQ)
if(TARGET paddock-pn)
  add_dependencies(bench_pn paddock-pn)
endif()
