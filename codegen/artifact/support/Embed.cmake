# Writes the bytes of the file IN as a C++ array initializer to OUT
# (`0x7f,0x45,...`), so that tgc carries the compiled support object
# (tgx_support.c) inside its binary: it then works from the build tree, an
# installed prefix or a clean clone alike, with no file to find next to it.
# Run as: cmake -DIN=<object> -DOUT=<file.inc> -P Embed.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}.tmp" "${bytes}\n")
# Unchanged output keeps its timestamp: nothing that includes it rebuilds.
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
