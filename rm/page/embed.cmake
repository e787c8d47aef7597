# embed.cmake: writes the file IN as a C array to OUT (cmake -DIN=... -DOUT=... -P embed.cmake).
# The cluster page (rm/page/cluster.html) is served from paddock-rm's memory, so the daemon
# needs no file beside it and the page no network beyond the RM.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp"
  "/* generated from rm/page/cluster.html by rm/page/embed.cmake: do not edit */\n"
  "#include <stddef.h>\n"
  "extern const unsigned char rm_page_html[];\n"
  "extern const size_t rm_page_html_len;\n"
  "const unsigned char rm_page_html[] = {\n${body}0x00};\n"
  "const size_t rm_page_html_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
