# paddock-pn-exec: the exec shim paddock-pn uses to run tasks as pn.run_as when it is root.
add_executable(paddock-pn-exec ${CMAKE_CURRENT_LIST_DIR}/pn_exec.c)
install(TARGETS paddock-pn-exec RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
if(TARGET paddock-pn)
  add_dependencies(paddock-pn paddock-pn-exec)
endif()
