# bench_e2e: the real daemons end to end (targets: docs/architecture.md, "Targets"): `true` tasks
# through submit -> JM -> PN beside the machine's posix_spawn floor (and a serial fork+exec loop) in
# the same run, and ready-to-running latency on an idle cluster. A benchmark: prints figures, not
# part of ctest.
add_executable(bench_e2e ${CMAKE_CURRENT_LIST_DIR}/bench_e2e.c
                         ${CMAKE_CURRENT_LIST_DIR}/bench_spawnfloor.c)
target_link_libraries(bench_e2e PRIVATE PkgConfig::JANSSON)
foreach(dep paddock paddock-rm paddock-pn paddock-pn-exec paddock-jm)
  if(TARGET ${dep})
    add_dependencies(bench_e2e ${dep})
  endif()
endforeach()
