#The WfCommons importer's converter, used by `paddock import wfcommons` (tools/cli_import.c)
#and by tests / jm / test_wfcommons.c.
target_sources(paddock PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} / wfcommons.c)
