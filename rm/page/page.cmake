# rm/page: the cluster page's HTML (cluster.html), embedded in paddock_rm as a C array that
# rm/rm_page.c serves (docs/cluster-page.md). Included by rm/CMakeLists.txt after paddock_rm.
set(_rm_page_in ${CMAKE_CURRENT_LIST_DIR}/cluster.html)
set(_rm_page_out ${CMAKE_CURRENT_BINARY_DIR}/rm_page_html.c)
add_custom_command(OUTPUT ${_rm_page_out}
  COMMAND ${CMAKE_COMMAND} -DIN=${_rm_page_in} -DOUT=${_rm_page_out}
          -P ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  DEPENDS ${_rm_page_in} ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  COMMENT "Embedding the cluster page" VERBATIM)
target_sources(paddock_rm PRIVATE ${_rm_page_out})
