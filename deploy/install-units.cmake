# Included by `cmake --install` (deploy/CMakeLists.txt): writes the units with the paths of the
# prefix being installed to (so `cmake --install --prefix /usr` gives ExecStart=/usr/sbin/...),
# then installs them (DESTDIR applies). Set by the caller: PADDOCK_SRC, PADDOCK_BIN,
# PADDOCK_UNIT_DIR, PADDOCK_SBINDIR, PADDOCK_DOCDIR (relative to the prefix, or absolute).
foreach(v PADDOCK_UNIT_DIR PADDOCK_SBINDIR PADDOCK_DOCDIR)
  if(NOT IS_ABSOLUTE "${${v}}")
    set(${v} "${CMAKE_INSTALL_PREFIX}/${${v}}")
  endif()
endforeach()
set(PADDOCK_SBIN_DIR "${PADDOCK_SBINDIR}")
set(PADDOCK_DOC_DIR "${PADDOCK_DOCDIR}")
set(PADDOCK_EXAMPLES_DIR "${PADDOCK_DOCDIR}/examples")
foreach(u paddock-rm.service paddock-pn.service paddock-pn@.service paddock-jm@.service)
  configure_file("${PADDOCK_SRC}/${u}.in" "${PADDOCK_BIN}/units/${u}" @ONLY)
  file(INSTALL DESTINATION "${PADDOCK_UNIT_DIR}" TYPE FILE FILES "${PADDOCK_BIN}/units/${u}")
endforeach()
