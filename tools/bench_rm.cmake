# bench_rm: the resource monitor's figures (targets: docs/architecture.md, "Targets"): heartbeat
# ingest rate on one replica with thousands of simulated PNs and its RSS with a 20,000-node view,
# the cost of publishing a 20,000-node view to 100 subscribers, and token-grant commit latency on
# three replicas. A benchmark: prints figures, not part of ctest.
add_executable(bench_rm ${CMAKE_CURRENT_LIST_DIR}/bench_rm.c ${CMAKE_CURRENT_LIST_DIR}/bench_rm_view.c
               ${CMAKE_CURRENT_LIST_DIR}/bench_rm_recv.c)
target_link_libraries(bench_rm PRIVATE paddock_rm paddock_jm paddock_proto paddock_common PkgConfig::CZMQ
                      PkgConfig::JANSSON)
if(TARGET paddock-rm AND TARGET paddock)
  add_dependencies(bench_rm paddock-rm paddock)
endif()
